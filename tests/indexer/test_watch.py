"""The watcher keeps the index fresh from real file-system events, in debounced batches."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from watchdog.observers.api import EventEmitter

from indexer import Index, IndexStats, compact, watch

from .conftest import write


def test_watcher_indexes_created_changed_and_deleted_files(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "keep.py", "def steady():\n    pass\n")
    idx = open_index(repo)
    idx.update()
    batches: list[list[str]] = []
    arrived = threading.Event()

    def on_batch(paths: list[str], stats: IndexStats) -> None:
        batches.append(paths)
        arrived.set()

    with watch(repo, on_batch, index=idx, debounce=0.1) as watcher:
        write(repo, "pkg/fresh.py", "def watched_newcomer():\n    pass\n")
        assert arrived.wait(60), watcher.errors
        assert [h.name for h in idx.search("watched_newcomer")] == ["watched_newcomer"]

        arrived.clear()
        (repo / "pkg" / "fresh.py").unlink()
        assert arrived.wait(60), watcher.errors
        assert idx.search("watched_newcomer") == []

        arrived.clear()
        write(repo, ".kiln/ignored.txt", "the index folder itself never triggers a batch")
        write(repo, "keep.py", "def steady_changed():\n    pass\n")
        assert arrived.wait(60)
    assert all(not p.startswith(".kiln") for batch in batches for p in batch)
    assert [h.name for h in idx.search("steady_changed")] == ["steady_changed"]
    assert watcher.errors == []


def _wakeups(threads: list[threading.Thread]) -> int:
    """How often ``threads`` went to sleep and were woken (the kernel's count)."""
    total = 0
    for thread in threads:
        status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
        total += int(status.split("voluntary_ctxt_switches:")[1].split()[0])
    return total


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify and /proc")
def test_an_editing_session_does_not_wake_the_watcher(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    """Each edit of a buffer writes a dozen pages to SQLite's write-ahead log beside the
    index, and inotify woke the watcher's threads for each write, only for the events to be
    dropped (CPU taken from the edit and the search after it); they now sleep through the
    edits, and a file saved on disk is still noticed."""
    body = "".join(f"    step_{n} = value + {n}\n" for n in range(40))
    text = f"def long_function(value):\n{body}    return value\n\n\ndef other():\n    pass\n"
    write(repo, "mod.py", text)
    idx = open_index(repo)
    idx.update()
    idx.update_file("mod.py", text)
    arrived = threading.Event()
    with watch(repo, lambda p, s: arrived.set(), index=idx, debounce=0.1) as watcher:
        emitters = [t for t in threading.enumerate() if isinstance(t, EventEmitter)]
        assert emitters
        before = _wakeups(emitters)
        for n in range(30):
            text = text.replace("    return value\n", f"    typed_{n} = {n}\n    return value\n")
            idx.update_file("mod.py", text)
        woken = _wakeups(emitters) - before
        assert woken < 10, woken
        write(repo, "mod.py", "def saved_on_disk():\n    pass\n")
        assert arrived.wait(60), watcher.errors
    assert [h.name for h in idx.search("saved_on_disk")] == ["saved_on_disk"]


def test_watcher_leaves_files_owned_by_open_buffers_alone(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "open.py", "def on_disk_version():\n    pass\n")
    idx = open_index(repo)
    idx.update()
    idx.update_file("open.py", "def unsaved_buffer_version():\n    pass\n")
    arrived = threading.Event()
    owned = {(repo / "open.py").resolve()}

    with watch(
        repo,
        lambda p, s: arrived.set(),
        index=idx,
        debounce=0.1,
        skip=lambda path: path.resolve() in owned,
    ) as watcher:
        write(repo, "open.py", "def changed_on_disk_meanwhile():\n    pass\n")
        write(repo, "other.py", "def other_file_changed():\n    pass\n")
        assert arrived.wait(60), watcher.errors
    assert [h.name for h in idx.search("unsaved_buffer_version")] == ["unsaved_buffer_version"]
    assert all(
        h.name != "changed_on_disk_meanwhile" for h in idx.search("changed_on_disk_meanwhile")
    )
    assert [h.name for h in idx.search("other_file_changed")] == ["other_file_changed"]


def test_segments_left_by_batches_are_merged_once_the_tree_is_quiet(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "keep.py", "def steady():\n    pass\n")
    idx = open_index(repo)
    idx.update()
    arrived = threading.Event()
    with watch(repo, lambda p, s: arrived.set(), index=idx, debounce=0.05, idle=0.2) as watcher:
        for n in range(6):  # a batch each: a segment each (FTS5 merges by itself at 8)
            arrived.clear()
            write(repo, f"m{n}.py", f"def parcel_total_{n}():\n    return {n}\n")
            assert arrived.wait(60), watcher.errors
        assert compact.segments(idx._conn, "blocks_fts") > 4 or watcher.merged.is_set()
        assert watcher.merged.wait(60), watcher.errors
        assert compact.segments(idx._conn, "blocks_fts") <= 2
        assert idx.search("parcel total 5", 1)[0].name == "parcel_total_5"
        arrived.clear()
        write(repo, "keep.py", "def steady_again():\n    pass\n")
        assert arrived.wait(60), watcher.errors
        assert watcher.merged.wait(60), watcher.errors  # quiet again: merged again
    assert watcher.errors == []


def test_a_full_scan_keeps_the_rows_of_buffers_the_disk_does_not_hold(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    """A new folder makes the watcher rescan the whole tree; a buffer never saved (or whose
    file was deleted under it) is in no folder the scan walks, and its rows must stay: hover
    and search_code found nothing of it once a folder had been created in the workspace."""
    write(repo, "keep.py", "def steady():\n    pass\n")
    idx = open_index(repo)
    idx.update()
    idx.update_file(repo / "unsaved.py", "def unsaved_only_symbol():\n    pass\n")
    idx.update_file(repo / "closed.py", "def closed_buffer_symbol():\n    pass\n")
    owned = {(repo / "unsaved.py").resolve()}  # closed.py's buffer is no longer open
    arrived = threading.Event()
    with watch(
        repo,
        lambda p, s: arrived.set(),
        index=idx,
        debounce=0.1,
        skip=lambda path: path.resolve() in owned,
    ) as watcher:
        write(repo, "newpkg/fresh.py", "def scanned_newcomer():\n    pass\n")  # a folder event
        assert arrived.wait(60), watcher.errors
    assert [h.name for h in idx.search("scanned_newcomer")] == ["scanned_newcomer"]
    assert [h.name for h in idx.search("unsaved_only_symbol")] == ["unsaved_only_symbol"]
    assert all(h.name != "closed_buffer_symbol" for h in idx.search("closed_buffer_symbol"))
    assert watcher.errors == []


def test_a_batch_that_meets_a_locked_index_is_applied_once_the_lock_goes(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    """Another process writing the index (a second watcher, a `kiln index`) past the busy
    timeout: the batch was dropped, and the index kept the file's old text until it changed
    again. It is now tried again, and applied once the other writer is done."""
    import sqlite3

    from tests.waiting import wait_until

    write(repo, "mod.py", "def before_the_lock():\n    pass\n")
    idx = open_index(repo, busy_timeout=0.1)
    idx.update()
    arrived = threading.Event()
    other = sqlite3.connect(repo / ".kiln" / "index.db", isolation_level=None)
    try:
        with watch(repo, lambda paths, stats: arrived.set(), index=idx, debounce=0.1) as watcher:
            other.execute("BEGIN IMMEDIATE")  # held as another process's write would be
            write(repo, "mod.py", "def during_the_lock():\n    pass\n")
            wait_until(lambda: watcher.errors, timeout=60)
            other.execute("COMMIT")
            assert arrived.wait(60), watcher.errors
    finally:
        other.close()
    assert "locked" in watcher.errors[0]
    assert [h.name for h in idx.search("during_the_lock")] == ["during_the_lock"]
    assert all(h.name != "before_the_lock" for h in idx.search("before_the_lock"))
