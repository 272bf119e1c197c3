"""Where an index may be written: ``<root>/.kiln/index.db``, never through a link.

A checkout can ship ``.kiln`` (or ``.kiln/index.db``) as a symbolic link. SQLite follows it, so
the index and its ``-wal``/``-shm`` files would be created wherever the link points: a file of
the user's outside the workspace, overwritten or grown by every edit. A hard link is the same
file under a second name: git cannot ship one, but an unpacked archive or a setup script can
make ``index.db`` (or its ``-wal``, which SQLite truncates on open) a name of a file elsewhere.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from indexer.errors import IndexLinked, IndexNotAFile

_NAMES = ("index.db", "index.db-wal", "index.db-shm")
_ASIDE = ("index.db.corrupt", "index.db.corrupt-wal", "index.db.corrupt-shm")


def refuse_links(root: Path, db_path: Path) -> None:
    """Raise ``IndexLinked`` when the index folder or one of its files is a link (an index
    file a hard link too), ``IndexNotAFile`` when one of them is not a folder or a regular
    file."""
    folder = db_path.parent
    if folder.is_symlink() or folder.resolve() != root / folder.name:
        raise IndexLinked(f"{folder} is a link; kiln does not write the index through it")
    if folder.exists() and not folder.is_dir():  # "cannot create …: File exists" said less
        raise IndexNotAFile(
            f"{folder} is not a folder",
            hint=f"move it away: the index is written to the folder {folder}",
        )
    for name in _NAMES + _ASIDE:
        if (folder / name).is_symlink():
            raise IndexLinked(
                f"{folder / name} is a link; kiln does not write the index through it"
            )
    # A FIFO there would block SQLite's reads; a folder cannot be opened. A folder where a
    # damaged index is set aside took it in (index.db.corrupt/index.db), or, holding that name
    # already, failed every run with "Destination path … already exists".
    for name in _NAMES + _ASIDE:
        try:
            st = (folder / name).lstat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            hint = None if name in _NAMES else "remove it: a damaged index is set aside there"
            raise IndexNotAFile(f"{folder / name} is not a regular file", hint=hint)
        if st.st_nlink > 1 and name in _NAMES:  # the set-aside names are only renamed over
            raise IndexLinked(
                f"{folder / name} is a hard link (one of {st.st_nlink} names of a file);"
                " kiln does not write the index through it"
            )


# What git should not track in ``<root>/.kiln``: the index is rebuilt by ``kiln index``, a cache
# of many MB; the folder's other files (settings.json, skills) are the project's and stay seen.
GITIGNORE = "# Kiln's code index: a cache `kiln index` rebuilds\nindex.db*\n.gitignore\n"


def keep_out_of_git(folder: Path) -> None:
    """Write ``folder/.gitignore`` naming the index files, unless one is there: after a first
    `kiln index`, `git status` listed `.kiln/` and `git add -A` committed index.db. The file
    ignores itself, so the folder shows only what the project keeps there. Never through a
    link, never over a file of the user's; a folder it cannot write is left as it is."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(folder / ".gitignore", flags, 0o644)
    except OSError:  # there already (or a link), or not writable
        return
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(GITIGNORE)
