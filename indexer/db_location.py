"""Where an index may be written: ``<root>/.kiln/index.db``, never through a link.

A checkout can ship ``.kiln`` (or ``.kiln/index.db``) as a symbolic link. SQLite follows it, so
the index and its ``-wal``/``-shm`` files would be created wherever the link points: a file of
the user's outside the workspace, overwritten or grown by every edit.
"""

from __future__ import annotations

import stat
from pathlib import Path

from indexer.errors import IndexLinked, IndexNotAFile

_NAMES = ("index.db", "index.db-wal", "index.db-shm")
_ASIDE = ("index.db.corrupt", "index.db.corrupt-wal", "index.db.corrupt-shm")


def refuse_links(root: Path, db_path: Path) -> None:
    """Raise ``IndexLinked`` when the index folder or one of its files is a link."""
    folder = db_path.parent
    if folder.is_symlink() or folder.resolve() != root / folder.name:
        raise IndexLinked(f"{folder} is a link; kiln does not write the index through it")
    for name in _NAMES + _ASIDE:
        if (folder / name).is_symlink():
            raise IndexLinked(
                f"{folder / name} is a link; kiln does not write the index through it"
            )
    for name in _NAMES:  # a FIFO there would block SQLite's reads; a folder cannot be opened
        try:
            mode = (folder / name).lstat().st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode):
            raise IndexNotAFile(f"{folder / name} is not a regular file")
