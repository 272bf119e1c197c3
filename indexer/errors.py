"""The indexer's own small errors table (a leaf library must not import ``agent``).

Same duck-typed shape as ``agent.errors``: a message, a user-facing ``hint``, a ``retryable``
flag and an ``exit_code``, so the CLI turns any of them into one line and a non-zero exit.
"""

from __future__ import annotations


class IndexError_(Exception):
    """Base class; named with a trailing underscore so it never shadows the builtin."""

    hint: str = ""
    retryable: bool = False
    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


class IndexLocked(IndexError_):
    """Another process holds a write lock on index.db for longer than the busy timeout."""

    retryable = True
    hint = "another kiln process is writing the index; retry when it finishes"


class IndexCorrupt(IndexError_):
    """index.db was found damaged while in use; ``Index.update`` rebuilds it."""

    hint = "run `kiln index` to rebuild it"


class IndexUnavailable(IndexError_):
    """The index folder cannot be created or written (permissions, read-only disk)."""

    hint = "check that <root>/.kiln is writable"


class NotADirectory(IndexError_):
    exit_code = 2
    hint = "pass the folder of a project"


class PathOutsideRoot(IndexError_):
    exit_code = 2
    hint = "paths must resolve inside the indexed root"
