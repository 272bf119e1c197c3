"""A file copied over `.kiln/index.db` in place (`cp backup.db .kiln/index.db`, a tool that
truncates and writes: the same inode, so the check by identity saw nothing) under a running
index, and the refill after any swap: the watcher fills a file moved or copied in at once, not
at the next change of a source file. Real SQLite files, a real watcher."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from indexer import Index, watch

from .conftest import write
from .test_index_swap import in_a_new_thread, names, other_index

WAIT = 30.0  # seconds; only a failure waits this long


def wal_frames(idx: Index) -> int:
    return idx.db_path.with_name("index.db-wal").stat().st_size


def copied_in_place(source: Path | None, db_path: Path) -> None:
    """``source``'s bytes (None: none) written over ``db_path``'s own inode."""
    before = os.stat(db_path).st_ino
    with open(db_path, "r+b") as out:
        out.truncate(0)
        if source is not None:
            out.write(source.read_bytes())
    assert os.stat(db_path).st_ino == before


def test_a_foreign_index_copied_in_place_is_set_aside_not_mixed_with_the_wal(
    repo: Path, tmp_path: Path
) -> None:
    write(repo, "a.py", "def quokka():\n    pass\n")
    with Index(repo) as idx:
        idx.update()
        write(repo, "c.py", "def gannet():\n    pass\n")
        idx.update_file(repo / "c.py")  # frames in the -wal, of this file
        assert wal_frames(idx) > 0 and names(idx, "gannet") == ["gannet"]
        copied_in_place(other_index(tmp_path), idx.db_path)
        # Its pages cannot be told from the -wal's of the file before (SQLite checkpoints
        # that into it as the last connection closes): set aside, an empty index made.
        assert in_a_new_thread(idx, "zebra") == []
        assert names(idx, "gannet") == [] and names(idx, "quokka") == []
        assert idx.recovered is not None and "overwritten in place" in idx.recovered
        assert (repo / ".kiln" / "index.db.corrupt").exists()
        idx.update()
        assert names(idx, "quokka") == ["quokka"] and names(idx, "gannet") == ["gannet"]
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


def test_an_empty_file_copied_in_place_is_an_empty_index_not_an_error(repo: Path) -> None:
    write(repo, "a.py", "def quokka():\n    pass\n")
    with Index(repo) as idx:
        idx.update()
        copied_in_place(None, idx.db_path)
        assert names(idx, "quokka") == []
        idx.update()
        assert names(idx, "quokka") == ["quokka"]


@pytest.mark.parametrize("how", ["moved", "copied in place", "emptied in place"])
def test_the_watcher_fills_a_swapped_in_index_at_once(repo: Path, tmp_path: Path, how: str) -> None:
    write(repo, "a.py", "def quokka():\n    pass\n")
    other = other_index(tmp_path)
    with Index(repo) as idx:
        idx.update()
        with watch(repo, index=idx, debounce=0.05) as watcher:
            time.sleep(0.3)  # the observer's watches in place (inotify)
            if how == "moved":
                shutil.copyfile(other, tmp_path / "moved.db")
                os.replace(tmp_path / "moved.db", idx.db_path)
            else:
                copied_in_place(other if how == "copied in place" else None, idx.db_path)
            deadline = time.monotonic() + WAIT
            while names(idx, "quokka") != ["quokka"] and time.monotonic() < deadline:
                time.sleep(0.05)  # no source file changes: only the swap can start a scan
            assert names(idx, "quokka") == ["quokka"], watcher.errors
            assert names(idx, "zebra") == []


def test_the_index_own_older_backup_copied_in_place_is_set_aside_not_read_as_fresh(
    repo: Path, tmp_path: Path
) -> None:
    """A backup of this very index (the same header id) copied back over it in place: the
    running index went on with its cached pages, never wrote the file again, and every other
    reader (`kiln search`, the editor's `@` completion) found the backup's rows of files
    changed since, as if fresh. An older generation in its header now tells it, as another
    file's id does: set aside, and the refill writes what the disk holds."""
    write(repo, "a.py", "def quokka():\n    pass\n")
    with Index(repo) as idx:
        idx.update()
    backup = tmp_path / "backup.db"
    shutil.copyfile(repo / ".kiln" / "index.db", backup)  # closed: no -wal, a whole copy
    with Index(repo) as idx:
        write(repo, "a.py", "def wombat():\n    pass\n")
        idx.update()
        assert names(idx, "quokka") == [] and names(idx, "wombat") == ["wombat"]
        copied_in_place(backup, idx.db_path)
        assert names(idx, "quokka") == []  # its next search notices
        assert ("quokka",) not in blocks_read_apart(idx.db_path)
        assert idx.recovered is not None and "overwritten in place" in idx.recovered
        assert (repo / ".kiln" / "index.db.corrupt").exists()
        idx.update()
        assert names(idx, "wombat") == ["wombat"]
        assert blocks_read_apart(idx.db_path) == [("wombat",)]


def blocks_read_apart(db: Path) -> list[tuple[str]]:
    """The block names another process reading the index finds."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT name FROM blocks").fetchall()
    finally:
        conn.close()
