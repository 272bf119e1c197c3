"""The indexer's own small errors table (a leaf library must not import ``agent``).

Every error derives from ``kiln_errors.KilnError``: a message, a user-facing ``hint``, a
``retryable`` flag and an ``exit_code``, so the CLI turns any of them into one line and a
non-zero exit.
"""

from __future__ import annotations

from kiln_errors import KilnError


class IndexerError(KilnError):
    """Base of every error the indexer raises on purpose."""


class IndexLocked(IndexerError):
    """Another process holds a write lock on index.db for longer than the busy timeout."""

    retryable = True
    hint = "another kiln process is writing the index; retry when it finishes"


class IndexCorrupt(IndexerError):
    """index.db was found damaged while in use; ``Index.update`` rebuilds it."""

    hint = "run `kiln index` to rebuild it"


class IndexUnavailable(IndexerError):
    """The index folder cannot be created or written (permissions, read-only disk)."""

    hint = "check that <root>/.kiln is writable"


class IndexFull(IndexUnavailable):
    """The disk that holds index.db is full (or a file size limit was reached): what was
    committed is kept, and a write tried again once there is room goes on from there."""

    retryable = True
    hint = "free space on the disk that holds it, then run `kiln index` again"


class IndexLinked(IndexUnavailable):
    """``<root>/.kiln`` or the index file is a link (a checkout can ship one), or the index
    file a hard link (an unpacked archive can hold one)."""

    exit_code = 2
    hint = "remove the link: the index is written only to <root>/.kiln/index.db itself"


class IndexNotAFile(IndexUnavailable):
    """The index file (or its ``-wal``/``-shm``) is a FIFO, a device or a folder."""

    exit_code = 2
    hint = "remove it: the index is a regular file, <root>/.kiln/index.db"


class NotADirectory(IndexerError):
    exit_code = 2
    hint = "pass the folder of a project"


class PathOutsideRoot(IndexerError):
    exit_code = 2
    hint = "paths must resolve inside the indexed root"


class BadSetting(IndexerError):
    """An environment variable the indexer reads holds a value it cannot use."""

    exit_code = 2


class IndexFromNewerKiln(IndexerError):
    """index.db records schema steps this Kiln does not know: a newer Kiln wrote it."""


class IndexUntrusted(IndexerError):
    """index.db holds triggers, views, indexes or tables this Kiln does not make."""


class WatchUnavailable(IndexerError):
    """The file watcher cannot follow the tree (folders nested deeper than it can walk)."""

    hint = "index without --watch; run `kiln index` again after changes"
