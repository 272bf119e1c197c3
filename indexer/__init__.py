"""The code index: tree-sitter chunking into blocks, a SQLite store, ranking and file watching.

A leaf library: it imports nothing from the rest of Kiln. The names below are imported on
first use (PEP 562): a process that only reads a file through ``indexer.reading`` (every
`kiln run`, for the git credential check) does not load the store, the ranking and the
watcher (~40 ms).
"""

from typing import TYPE_CHECKING, Any

from indexer.errors import (
    IndexCorrupt,
    IndexerError,
    IndexFull,
    IndexLocked,
    IndexUnavailable,
    NotADirectory,
    PathOutsideRoot,
)

if TYPE_CHECKING:
    from indexer.index import Index
    from indexer.ranking import Hit
    from indexer.records import IndexStats
    from indexer.watcher import Watcher, watch

_LAZY = {
    "Index": "indexer.index",
    "Hit": "indexer.ranking",
    "IndexStats": "indexer.records",
    "Watcher": "indexer.watcher",
    "watch": "indexer.watcher",
}

__all__ = [
    "Hit",
    "IndexCorrupt",
    "Index",
    "IndexerError",
    "IndexFull",
    "IndexLocked",
    "IndexStats",
    "IndexUnavailable",
    "NotADirectory",
    "PathOutsideRoot",
    "Watcher",
    "watch",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'indexer' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
