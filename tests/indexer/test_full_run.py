"""A full run of many files: the workers parse while git lists the history, the history is
recorded as soon as git is done (not after the last file), and the bulk settings the run
wrote with are put back. Real git repositories, real worker processes, real SQLite files."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index, history
from indexer import index as index_module
from tests import repos
from tests.waiting import wait_until

from .conftest import write

FILES = 80  # above the worker pool's threshold and the bulk threshold set below


def _git_children() -> list[int]:
    """Our child processes that are a running (not yet exited) git."""
    found = []
    for task in Path(f"/proc/{Path('/proc/self').resolve().name}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except (FileNotFoundError, ProcessLookupError):  # a thread that ended meanwhile
            continue
        for child in children:
            try:
                comm = Path(f"/proc/{child}/comm").read_text().strip()
                state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (FileNotFoundError, ProcessLookupError):
                continue
            if comm == "git" and state != "Z":
                found.append(int(child))
    return found


@pytest.fixture
def many_commits(repo: Path) -> Path:
    repos.git(repo, "init", "-q", "-b", "main")
    repos.git(repo, "config", "user.email", "test@kiln.invalid")
    repos.git(repo, "config", "user.name", "Kiln tests")
    for i in range(FILES):
        write(repo, f"pkg{i % 8}/module_{i}.py", f"def handler_{i}(request):\n    return {i}\n")
    repos.git(repo, "add", "-A")
    repos.git(repo, "commit", "-q", "-m", "Add the request handlers")
    write(repo, "pkg0/module_0.py", "def handler_0(request):\n    return 'zero'\n")
    repos.git(repo, "commit", "-qam", "Fix the parcel surcharge rounding in handler zero")
    return repo


@pytest.mark.skipif(sys.platform != "linux", reason="finds the git process in /proc")
def test_history_is_recorded_while_files_are_still_being_indexed(
    many_commits: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "BATCH_SECONDS", 0.0)  # one file per transaction
    monkeypatch.setattr(index_module, "BULK_FILES", 10)
    idx = open_index(many_commits)
    commits_seen_at: list[int] = []

    def progress(done: int, total: int, path: str) -> None:
        if done == 1:  # git lists the history meanwhile: let it finish first
            assert wait_until(lambda: not _git_children(), 60), "git log never finished"
        reader = sqlite3.connect(idx.db_path)
        try:
            if reader.execute("SELECT count(*) FROM commits").fetchone()[0]:
                commits_seen_at.append(done)
        finally:
            reader.close()

    stats = idx.update(progress)
    assert stats.commits == 2
    assert stats.files_indexed == FILES
    assert commits_seen_at and commits_seen_at[0] < FILES  # recorded before the last file
    assert idx.status()["files"] == FILES
    head = repos.git(many_commits, "rev-parse", "HEAD").strip()
    assert idx.status()["commits"] == 2 and idx.status()["history_head"] == head
    # the bulk run wrote with synchronous=OFF; the connection is back to NORMAL (1)
    assert idx._conn.execute("PRAGMA synchronous").fetchone()[0] == 1


def test_an_interrupted_bulk_run_resumes_with_the_history(
    many_commits: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "BATCH_SECONDS", 0.0)
    monkeypatch.setattr(index_module, "BULK_FILES", 10)
    idx = open_index(many_commits)

    def interrupt(done: int, total: int, path: str) -> None:
        if done == FILES // 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        idx.update(interrupt)
    assert wait_until(lambda: not _git_children(), 60), "git outlived the interrupted run"
    assert idx._conn.execute("PRAGMA synchronous").fetchone()[0] == 1
    kept = idx.status()["files"]
    assert 0 < kept < FILES  # the batches committed before the interrupt stay
    again = idx.update()
    assert again.files_indexed == FILES - kept
    assert idx.status()["files"] == FILES
    assert idx.status()["commits"] == 2


def test_a_history_reading_overtaken_by_another_sync_records_nothing(
    many_commits: Path, open_index: Callable[..., Index]
) -> None:
    idx = open_index(many_commits)
    first = history.start(idx._conn, idx.root)  # lists the two commits, nothing recorded yet
    assert first is not None
    write(many_commits, "pkg1/module_1.py", "def handler_1(request):\n    return 'one'\n")
    repos.git(many_commits, "commit", "-qam", "Return a name from handler one")
    head = repos.git(many_commits, "rev-parse", "HEAD").strip()
    assert idx.sync_history() == 3  # the watcher saw HEAD move and recorded all three
    assert history.finish(idx._conn, first) == 0  # the older listing no longer applies
    assert idx.status()["history_head"] == head
    assert idx.status()["commits"] == 3


def _payload(n: int) -> bytes:
    return bytes(range(256)) * (n // 256)


@pytest.mark.skipif(sys.platform != "linux", reason="pipe sizes are Linux's")
def test_the_workers_results_pipe_holds_a_whole_batch() -> None:
    """The executor's results pipe still has the shape ``_widen_results_pipe`` relies on (a
    Python release that changes it would otherwise quietly bring back the 64 kB pipe), and
    results larger than the pipe still arrive whole."""
    import fcntl
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from indexer import pipeline

    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        pipeline._widen_results_pipe(pool)
        reader = pool._result_queue._reader  # type: ignore[attr-defined]
        assert fcntl.fcntl(reader.fileno(), fcntl.F_GETPIPE_SZ) >= pipeline.RESULT_PIPE_BYTES
        sizes = [1 << 16, 3 << 20, 1 << 20]
        assert [pool.submit(_payload, n).result() for n in sizes] == [_payload(n) for n in sizes]
