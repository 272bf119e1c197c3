"""An index file replaced under the processes using it, with real SQLite files: another
process's rebuild, a copy or a restored backup moved over ``.kiln/index.db``, while a server
holds it open or after one was killed with its ``-wal`` unfinished (``indexer/wal_pairing.py``,
``Database.follow_swap``). Every connection moves to the file now at the path, and the old
file's ``-wal`` is never applied to it."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from indexer import Index
from indexer.errors import IndexLinked, IndexUnavailable

from .conftest import write

KILLED = """
import os, signal, sys
from indexer import Index
idx = Index(sys.argv[1])
idx.update()
assert os.path.getsize(idx.db_path.with_name("index.db-wal")) > 0
os.kill(os.getpid(), signal.SIGKILL)
"""


def other_index(tmp_path: Path) -> Path:
    """A finished index of another workspace, closed (no -wal left), to move over ours."""
    other = tmp_path / "other"
    write(other, "b.py", "def zebra():\n    pass\n")
    with Index(other) as idx:
        idx.update()
    assert not (other / ".kiln" / "index.db-wal").exists()
    return other / ".kiln" / "index.db"


def names(idx: Index, query: str) -> list[str]:
    return [h.name for h in idx.search(query)]


def in_a_new_thread(idx: Index, query: str) -> list[str]:
    """``idx.search`` from a thread that never searched before (its first connection)."""
    found: list[list[str]] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            found.append(names(idx, query))
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    if failed:
        raise failed[0]
    return found[0]


def paths_in(db_path: Path) -> list[str]:
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return sorted(row[0] for row in conn.execute("SELECT path FROM files"))
    finally:
        conn.close()


def test_a_file_moved_over_a_running_index_is_what_every_thread_then_uses(
    repo: Path, tmp_path: Path
) -> None:
    write(repo, "a.py", "def quokka():\n    pass\n")
    idx = Index(repo)
    try:
        idx.update()
        assert names(idx, "quokka") == ["quokka"]
        assert in_a_new_thread(idx, "quokka") == ["quokka"]
        os.replace(other_index(tmp_path), idx.db_path)  # the -wal and -shm stay beside it
        assert in_a_new_thread(idx, "zebra") == ["zebra"]
        assert in_a_new_thread(idx, "quokka") == []
        assert names(idx, "quokka") == []  # this thread's connections moved too
        write(repo, "c.py", "def gannet():\n    pass\n")
        idx.update_file(repo / "c.py")  # an editor's edit goes where searches look
        assert in_a_new_thread(idx, "gannet") == ["gannet"]
    finally:
        idx.close()
    assert paths_in(repo / ".kiln" / "index.db") == ["b.py", "c.py"]


def test_a_deleted_index_folder_under_a_running_index_is_made_again(repo: Path) -> None:
    write(repo, "a.py", "def quokka():\n    pass\n")
    with Index(repo) as idx:
        idx.update()
        for name in os.listdir(repo / ".kiln"):
            os.unlink(repo / ".kiln" / name)
        os.rmdir(repo / ".kiln")
        assert in_a_new_thread(idx, "quokka") == []  # an empty index, not an error
        idx.update()
        assert in_a_new_thread(idx, "quokka") == ["quokka"]
    assert paths_in(repo / ".kiln" / "index.db") == ["a.py"]


def killed_mid_run(repo: Path) -> None:
    """`kiln index` killed with what it committed still in the -wal (no checkpoint yet)."""
    write(repo, "a.py", "def quokka():\n    pass\n")
    done = subprocess.run([sys.executable, "-c", KILLED, str(repo)], timeout=120)
    assert done.returncode == -signal.SIGKILL
    assert (repo / ".kiln" / "index.db-wal").stat().st_size > 0


def test_the_wal_of_a_killed_run_is_kept_for_its_own_file(repo: Path) -> None:
    killed_mid_run(repo)
    with Index(repo) as idx:
        assert idx.recovered is None
        assert names(idx, "quokka") == ["quokka"]


def test_the_wal_of_a_killed_run_is_not_applied_to_a_file_moved_in_after(
    repo: Path, tmp_path: Path
) -> None:
    killed_mid_run(repo)
    db_path = repo / ".kiln" / "index.db"
    os.replace(other_index(tmp_path), db_path)
    with Index(repo) as idx:
        assert idx.recovered is not None and "replaced by another file" in idx.recovered
        assert names(idx, "zebra") == ["zebra"]
        assert names(idx, "quokka") == []
    assert paths_in(db_path) == ["b.py"]


def test_a_thread_reading_through_a_rebuild_and_a_swap_reconnects_each_time(
    repo: Path, tmp_path: Path
) -> None:
    write(repo, "a.py", "def quokka():\n    pass\n")
    with Index(repo) as idx:
        idx.update()
        assert names(idx, "quokka") == ["quokka"]
        idx.rebuild("a test")  # this thread's reader was closed with the others
        assert idx.status()["files"] == 0
        os.replace(other_index(tmp_path), idx.db_path)  # ... and now left open by a swap
        assert idx.status()["files"] == 1
        assert names(idx, "zebra") == ["zebra"]


def test_a_workspace_deleted_under_a_running_index_is_not_made_again(repo: Path) -> None:
    write(repo, "a.py", "def quokka():\n    pass\n")
    with Index(repo) as idx:
        idx.update()
        shutil.rmtree(repo)
        with pytest.raises(IndexUnavailable, match="cannot create"):
            in_a_new_thread(idx, "quokka")
    assert not repo.exists()


def test_an_update_after_a_refused_swap_says_the_same_in_one_error(
    repo: Path, tmp_path: Path
) -> None:
    """A link moved over the index is refused at every use, never a closed connection's
    ``ProgrammingError`` (an update sets the writer's checkpoint pragma first)."""
    write(repo, "a.py", "def quokka():\n    pass\n")
    with Index(repo) as idx:
        idx.update()
        target = tmp_path / "elsewhere.db"
        target.write_bytes(b"")
        os.unlink(idx.db_path)
        os.symlink(target, idx.db_path)
        for _ in range(2):
            with pytest.raises(IndexLinked):
                in_a_new_thread(idx, "quokka")
            with pytest.raises(IndexLinked):
                idx.update()
    assert target.read_bytes() == b""


def test_the_half_made_notes_of_killed_processes_are_swept_at_open(repo: Path) -> None:
    """A process killed between writing its pairing note and moving it into place leaves
    ``index.db-pair.<pid>``; repeated kills piled them up. Those of processes no longer
    running go when the index is opened; a running process's, and other names, stay."""
    write(repo, "a.py", "def alpha():\n    pass\n")
    with Index(repo) as idx:
        idx.update()
    folder = repo / ".kiln"
    dead = []
    for _ in range(3):  # real processes, killed and reaped: their ids are free
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        dead.append(folder / f"index.db-pair.{proc.pid}")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        kept = [folder / f"index.db-pair.{live.pid}", folder / "index.db-pair.notapid"]
        for path in dead + kept:
            path.write_text("1 2 3 4\n")
        with Index(repo) as idx:
            assert names(idx, "alpha") == ["alpha"]
        assert [p.name for p in dead if p.exists()] == []
        assert all(p.exists() for p in kept)
    finally:
        live.kill()
        live.wait()
