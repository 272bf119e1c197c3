"""What an editor session's index does between edits: searches run on the writer's connection
when no write is under way (and never see a write in progress, nor wait for it), edits leave
WAL checkpoints to the idle step, and typing without a pause leaves few full-text segments.
Real index files, real threads."""

from __future__ import annotations

import sqlite3
import struct
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import indexer.index as index_module
from indexer import Index, compact, store
from indexer.blocks import Block
from indexer.index import BULK_CHECKPOINT_PAGES, EDIT_CHECKPOINT_PAGES
from indexer.rows import prepare

from .conftest import write


def names(idx: Index, query: str) -> list[str]:
    return [h.name for h in idx.search(query, 10)]


def uncommitted_file(conn: sqlite3.Connection) -> None:
    """Rows of a new file defining ``uncommitted_marker``, written inside the caller's
    transaction."""
    text = "def uncommitted_marker():\n    return 1\n"
    block = Block(
        "function", "uncommitted_marker", "def uncommitted_marker()", "", 1, 2, text, "python"
    )
    block.defines = ["uncommitted_marker"]
    rows = prepare("pending.py", [block])
    store.write_file(conn, "pending.py", "python", 1, len(text), "h", rows)


def test_a_search_during_a_write_sees_committed_rows_only_and_does_not_wait(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "app.py", "def committed_marker():\n    return 0\n")
    idx = open_index(repo)
    idx.update()
    assert names(idx, "committed_marker") == ["committed_marker"]  # no write: the writer's
    holding, release = threading.Event(), threading.Event()
    seen_inside: list[list[str]] = []

    def writer() -> None:
        with idx._transaction() as conn:
            uncommitted_file(conn)
            seen_inside.append(names(idx, "uncommitted_marker"))  # this thread's own write
            holding.set()
            release.wait(60)
            conn.execute("ROLLBACK")
            conn.execute("BEGIN")  # what _transaction commits

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert holding.wait(60)
        found: list[list[str]] = []
        searcher = threading.Thread(
            target=lambda: found.append(names(idx, "uncommitted_marker committed_marker"))
        )
        searcher.start()
        searcher.join(60)  # the writer holds its lock until told: a waiting search never ends
        assert len(found) == 1 and "committed_marker" in found[0]
        assert "uncommitted_marker" not in found[0]
    finally:
        release.set()
        thread.join(60)
    assert len(seen_inside) == 1 and "uncommitted_marker" not in seen_inside[0]
    idx.update_file(
        "app.py", "def committed_marker():\n    return 0\n\ndef later_marker():\n    return 2\n"
    )
    assert names(idx, "later_marker")[0] == "later_marker"


def wal_frames(db_path: Path) -> tuple[int, int]:
    """(frames in the WAL, frames already copied into the database file), from the WAL index
    (the ``-shm`` file: ``mxFrame`` of its header, ``nBackfill`` of its checkpoint info)."""
    shm = Path(str(db_path) + "-shm").read_bytes()
    return struct.unpack_from("=I", shm, 16)[0], struct.unpack_from("=I", shm, 96)[0]


def big_module(version: int) -> str:
    """Every function's body changes with ``version``: a whole-file update rewrites every row."""
    return "".join(
        f"def step_{n}(value):\n    scaled = value * {version}\n    shifted = scaled + {n}\n"
        f"    return shifted - {version}\n\n\n"
        for n in range(600)
    )


def test_edits_leave_checkpoints_to_the_idle_step(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "big.py", big_module(0))
    idx = open_index(repo)
    idx.update()
    pragma = "PRAGMA wal_autocheckpoint"
    assert idx._conn.execute(pragma).fetchone()[0] == BULK_CHECKPOINT_PAGES
    frames = backfilled = 0
    for version in range(1, 40):  # bounded: each edit writes a few hundred pages
        idx.update_file("big.py", big_module(version))
        frames, backfilled = wal_frames(idx.db_path)
        if frames > BULK_CHECKPOINT_PAGES + 200:
            break
    assert idx._conn.execute(pragma).fetchone()[0] == EDIT_CHECKPOINT_PAGES
    assert frames > BULK_CHECKPOINT_PAGES + 200  # past SQLite's default: no edit checkpointed
    assert backfilled < frames
    idx.compact()  # the idle step
    frames, backfilled = wal_frames(idx.db_path)
    assert backfilled == frames
    assert names(idx, "step_7")[0] == "step_7"
    idx.update()
    assert idx._conn.execute(pragma).fetchone()[0] == BULK_CHECKPOINT_PAGES


def crisis_setting(idx: Index) -> int:
    return idx._conn.execute("SELECT v FROM blocks_fts_config WHERE k = 'crisismerge'").fetchone()[
        0
    ]


def test_typing_without_a_pause_leaves_few_segments(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = big_module(0)
    write(repo, "big.py", text)
    idx = open_index(repo)
    idx.update()
    assert crisis_setting(idx) == compact.BULK_CRISIS
    lines = text.split("\n")
    for n in range(40):  # each edit writes a segment; no idle step merges them here
        lines.insert(1, f"    typed_{n} = {n}")
        idx.update_file("big.py", "\n".join(lines))
    assert crisis_setting(idx) == compact.EDIT_CRISIS
    assert compact.segments(idx._conn, "blocks_fts") <= 10  # 29 with the full runs' setting
    assert names(idx, "typed_39")[0] == "step_0"
    monkeypatch.setattr(index_module, "BULK_FILES", 1)  # a full run sets it back
    write(repo, "other.py", "def other():\n    return 1\n")
    idx.update()
    assert crisis_setting(idx) == compact.BULK_CRISIS
