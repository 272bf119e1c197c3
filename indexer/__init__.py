"""The code index: tree-sitter chunking into blocks, a SQLite store, ranking and file watching.

A leaf library: it imports nothing from the rest of Kiln.
"""

from indexer.errors import (
    IndexCorrupt,
    IndexerError,
    IndexFull,
    IndexLocked,
    IndexUnavailable,
    NotADirectory,
    PathOutsideRoot,
)
from indexer.index import Index
from indexer.ranking import Hit
from indexer.records import IndexStats
from indexer.watcher import Watcher, watch

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
