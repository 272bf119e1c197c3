"""Bad input never crashes the indexer: every case below ends in a usable index."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from indexer import Index, IndexCorrupt, IndexLocked, NotADirectory
from indexer import index as index_module

from .conftest import write


def fts_ok(root: Path) -> None:
    """The external-content FTS table agrees with the blocks table."""
    conn = sqlite3.connect(root / ".kiln" / "index.db")
    try:
        conn.execute("INSERT INTO blocks_fts(blocks_fts, rank) VALUES ('integrity-check', 1)")
        orphans = conn.execute(
            "SELECT count(*) FROM blocks WHERE file_id NOT IN (SELECT id FROM files)"
        )
        assert orphans.fetchone()[0] == 0
    finally:
        conn.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_is_reported_and_skipped(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "ok.py", "def readable_one():\n    pass\n")
    secret = write(repo, "secret.py", "def hidden_one():\n    pass\n")
    secret.chmod(0)
    idx = open_index(repo)
    stats = idx.update()
    assert stats.skipped and stats.skipped[0].startswith("secret.py:")
    assert [h.name for h in idx.search("readable_one")] == ["readable_one"]


def test_file_that_cannot_be_opened_is_reported_and_skipped(
    repo: Path, open_index: Callable[..., Index], tmp_path: Path
) -> None:
    """Even root cannot open() a socket: swap one in after the listing, before the read."""
    import socket

    for i in range(4):
        write(repo, f"s{i}.py", f"def sturdy_{i}():\n    pass\n")
    sock = socket.socket(socket.AF_UNIX)

    def progress(done: int, total: int, path: str) -> None:
        if done == 1:
            (repo / "s2.py").unlink()
            sock.bind(str(repo / "s2.py"))

    try:
        idx = open_index(repo)
        stats = idx.update(progress)
    finally:
        sock.close()
    assert len(stats.skipped) == 1 and stats.skipped[0].startswith("s2.py: ")
    assert stats.files_indexed == 3
    assert idx.search("sturdy_3")[0].name == "sturdy_3"
    assert all(h.name != "sturdy_2" for h in idx.search("sturdy_2"))


def test_special_files_are_skipped_without_blocking(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "ok.py", "def regular_one():\n    pass\n")
    os.mkfifo(repo / "pipe.py")  # opening it for reading would block forever
    (repo / "dangling.py").symlink_to(repo / "missing.py")
    stats = open_index(repo).update()
    assert (stats.files_seen, stats.files_indexed) == (1, 1)


def test_invalid_utf8_is_indexed_with_replacement(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    (repo / "latin.py").write_bytes(b"# caf\xe9\ndef brule_order():\n    return '\xff\xfe'\n")
    idx = open_index(repo)
    idx.update()
    hit = idx.search("brule_order")[0]
    assert hit.name == "brule_order" and "\ufffd" in hit.text


def test_parse_errors_keep_the_valid_parts(repo: Path, open_index: Callable[..., Index]) -> None:
    write(
        repo,
        "broken.py",
        "def before_error():\n    return 1\n\ndef (:\n    ]]]\n\ndef after_error():\n    return 2\n",
    )
    idx = open_index(repo)
    idx.update()
    assert idx.search("before_error")[0].name == "before_error"
    assert idx.search("after_error")[0].name == "after_error"


def test_symlink_loops_are_walked_once(repo: Path, open_index: Callable[..., Index]) -> None:
    write(repo, "a/mod.py", "def looped_symbol():\n    pass\n")
    (repo / "a" / "again").symlink_to(repo / "a", target_is_directory=True)
    (repo / "up").symlink_to(repo, target_is_directory=True)
    (repo / "outside").symlink_to("/usr", target_is_directory=True)
    idx = open_index(repo)
    stats = idx.update()
    assert stats.files_seen == 1
    assert [h.path for h in idx.search("looped_symbol")] == ["a/mod.py"]


def test_a_folder_linked_from_elsewhere_is_indexed_under_its_real_path(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "pkg/web.py", "def check_etag_header(request):\n    pass\n")
    write(repo, "pkg/README.md", "notes\n")
    (repo / "maint" / "app").mkdir(parents=True)  # walked before pkg/: sorted first
    (repo / "maint" / "app" / "pkg").symlink_to(repo / "pkg", target_is_directory=True)
    (repo / "a_notes.md").symlink_to(repo / "pkg" / "README.md")
    (repo / "elsewhere").mkdir()
    (repo / "linked").symlink_to(repo / "elsewhere", target_is_directory=True)
    write(repo, "elsewhere/only.py", "def reached_once():\n    pass\n")
    (repo / "linked_only").mkdir()
    idx = open_index(repo)
    stats = idx.update()
    assert [h.path for h in idx.search("check_etag_header")] == ["pkg/web.py"]
    assert stats.files_seen == 3  # pkg/web.py, pkg/README.md, elsewhere/only.py: no aliases
    assert [h.path for h in idx.search("reached_once")] == ["elsewhere/only.py"]


def test_file_deleted_mid_index(repo: Path, open_index: Callable[..., Index]) -> None:
    for i in range(5):
        write(repo, f"f{i}.py", f"def fleeting_{i}():\n    pass\n")

    def progress(done: int, total: int, path: str) -> None:
        if done == 1:
            (repo / "f3.py").unlink()

    idx = open_index(repo)
    stats = idx.update(progress)
    assert stats.files_indexed == 4
    assert idx.search("fleeting_3") == [] or all(
        h.name != "fleeting_3" for h in idx.search("fleeting_3")
    )
    fts_ok(repo)


def test_corrupt_index_is_rebuilt_with_a_message(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "m.py", "def survivor_symbol():\n    pass\n")
    (repo / ".kiln").mkdir()
    (repo / ".kiln" / "index.db").write_bytes(b"this is not a database " * 400)
    idx = open_index(repo)
    assert idx.recovered and "rebuilt" in idx.recovered
    assert (repo / ".kiln" / "index.db.corrupt").exists()
    idx.update()
    assert idx.search("survivor_symbol")[0].name == "survivor_symbol"


def damage_middle(db: Path) -> None:
    """Overwrite the root pages of the tables every search reads (the block rows and their
    full-text index), leaving the header and the schema page intact: wherever a new table
    puts its pages, the damage shows on the first search and not on open."""
    conn = sqlite3.connect(db)
    try:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        roots = [
            row[0]
            for row in conn.execute(
                "SELECT rootpage FROM sqlite_master WHERE name IN"
                " ('block_rows', 'blocks_fts_data', 'blocks_fts_idx')"
            )
        ]
    finally:
        conn.close()
    assert len(roots) == 3 and 1 not in roots
    with db.open("r+b") as fh:
        for root in roots:
            fh.seek((root - 1) * page)
            fh.write(b"\xde\xad\xbe\xef" * (page // 4))


def test_index_damaged_after_opening_is_rebuilt_by_update(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    for i in range(20):
        write(repo, f"m{i}.py", f"def durable_{i}(x):\n    return x * {i}\n")
    first = open_index(repo)
    first.update()
    first.close()
    damage_middle(repo / ".kiln" / "index.db")
    idx = open_index(repo)  # the header is intact: the damage shows only when pages are read
    with pytest.raises(IndexCorrupt) as info:
        for i in range(20):
            idx.search(f"durable_{i}")
    assert "kiln index" in info.value.hint
    stats = idx.update()
    assert stats.files_indexed == 20 and idx.recovered and "rebuilt" in idx.recovered
    assert idx.search("durable_7")[0].name == "durable_7"
    fts_ok(repo)


def test_locked_index_raises_a_retryable_error(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "m.py", "def x():\n    pass\n")
    open_index(repo).update()
    holder = sqlite3.connect(repo / ".kiln" / "index.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("INSERT INTO meta VALUES ('held', '1')")
        idx = open_index(repo, busy_timeout=0.05)
        with pytest.raises(IndexLocked) as info:
            idx.update_file("m.py", "def y():\n    pass\n")
        assert info.value.retryable and info.value.hint and info.value.exit_code == 1
        assert [h.name for h in idx.search("x")] == ["x"]  # readers are not blocked (WAL)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_interrupted_run_resumes_cleanly(
    repo: Path, open_index: Callable[..., Index], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "BATCH_SECONDS", 0.0)  # commit after every file
    for i in range(8):
        write(repo, f"m{i}.py", f"def resumable_{i}():\n    pass\n")

    def interrupt(done: int, total: int, path: str) -> None:
        if done == 4:
            raise KeyboardInterrupt

    idx = open_index(repo)
    with pytest.raises(KeyboardInterrupt):
        idx.update(interrupt)
    committed = idx.status()["files"]
    assert 0 < committed < 8
    fts_ok(repo)
    stats = open_index(repo).update()
    assert stats.files_indexed == 8 - committed
    assert all(idx.search(f"resumable_{i}")[0].name == f"resumable_{i}" for i in range(8))


def test_query_of_stop_words_or_punctuation_is_empty(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    write(repo, "m.py", "def the():\n    return 'of and'\n")
    idx = open_index(repo)
    idx.update()
    assert idx.search("the of and") == []
    assert idx.search("?!*()[]") == []
    assert idx.search('" OR NEAR(') == []
    assert idx.search('m" OR x*') is not None  # FTS syntax is quoted, never an error


def test_root_must_be_a_folder(tmp_path: Path) -> None:
    with pytest.raises(NotADirectory) as info:
        Index(tmp_path / "missing")
    assert info.value.exit_code == 2
