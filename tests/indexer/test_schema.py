"""The index schema: sqlite-migrate's record on new files, and index files written by the
hand-written migrator that came before it still open, keep their rows and are searchable."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from indexer import Index, made_here, schema
from indexer.chunker import chunk_file
from indexer.pipeline import digest
from indexer.rows import BLOCK_COLUMNS, Prepared, prepare
from indexer.store import FTS_COLUMNS

from .conftest import write

# The schema exactly as the hand-written migrator created it (indexer/store.py before
# sqlite-migrate), with the names it recorded in `_migrations`.
LEGACY_DDL = """
CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at REAL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, language TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, hash TEXT NOT NULL,
    blocks INTEGER NOT NULL, indexed_at REAL NOT NULL);
CREATE TABLE blocks (id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, path TEXT NOT NULL,
    language TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, signature TEXT NOT NULL,
    docstring TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    hash TEXT NOT NULL, text TEXT NOT NULL, refs TEXT NOT NULL, fts_path TEXT NOT NULL,
    fts_name TEXT NOT NULL, idents TEXT NOT NULL);
CREATE INDEX blocks_file ON blocks(file_id);
CREATE VIRTUAL TABLE blocks_fts USING fts5(fts_path, fts_name, signature, docstring, text,
    idents, content='blocks', content_rowid='id', tokenize='porter unicode61');
CREATE TABLE defs (name TEXT NOT NULL, block_id INTEGER NOT NULL, file_id INTEGER NOT NULL,
    PRIMARY KEY (name, block_id)) WITHOUT ROWID;
CREATE INDEX defs_file ON defs(file_id);
CREATE TABLE refs (name TEXT NOT NULL, block_id INTEGER NOT NULL, file_id INTEGER NOT NULL,
    PRIMARY KEY (name, block_id)) WITHOUT ROWID;
CREATE INDEX refs_file ON refs(file_id);
CREATE VIRTUAL TABLE blocks_vocab USING fts5vocab(blocks_fts, 'row');
INSERT INTO blocks_fts(blocks_fts, rank) VALUES ('automerge', 8);
INSERT INTO blocks_fts(blocks_fts, rank) VALUES ('crisismerge', 64);
CREATE TABLE commits (id INTEGER PRIMARY KEY, sha TEXT NOT NULL UNIQUE, time INTEGER NOT NULL,
    message TEXT NOT NULL, files INTEGER NOT NULL);
CREATE TABLE commit_files (commit_id INTEGER NOT NULL, path TEXT NOT NULL,
    PRIMARY KEY (commit_id, path)) WITHOUT ROWID;
CREATE INDEX commit_files_path ON commit_files(path);
CREATE VIRTUAL TABLE commits_fts USING fts5(message, tokenize='porter unicode61');
CREATE VIRTUAL TABLE commits_vocab USING fts5vocab(commits_fts, 'row');
INSERT INTO _migrations VALUES ('m001_initial', 1764000000.0), ('m002_fts_vocab', 1764000000.0),
    ('m003_fts_merge', 1764000000.0), ('m004_history', 1764000000.0),
    ('m005_history_vocab', 1764000000.0);
"""

SOURCE = 'def settle_invoice(invoice):\n    """Mark an invoice paid."""\n    return invoice\n'


def _legacy_write(
    conn: sqlite3.Connection, rel: str, mtime_ns: int, size: int, data: bytes, prepared: Prepared
) -> None:
    """A file's rows as the store wrote them into the legacy ``blocks`` table (the hash of
    ``data``, the file's bytes: an index opened with new reading rules checks it again)."""
    file_id = conn.execute(
        "INSERT INTO files (path, language, mtime_ns, size, hash, blocks, indexed_at)"
        " VALUES (?, 'python', ?, ?, ?, ?, 0)",
        (rel, mtime_ns, size, digest(data), len(prepared)),
    ).lastrowid
    conn.executemany(
        f"INSERT INTO blocks (file_id, {BLOCK_COLUMNS}) VALUES ({', '.join('?' * 15)})",
        [(file_id, *row) for row in prepared.rows],  # complete: no known hashes,
    )
    cols = ", ".join(FTS_COLUMNS)
    conn.execute(f"INSERT INTO blocks_fts(rowid, {cols}) SELECT id, {cols} FROM blocks")
    for table, names in (("defs", prepared.defs), ("refs", prepared.refs)):
        ids = [r[0] for r in conn.execute("SELECT id FROM blocks ORDER BY id")]
        conn.executemany(
            f"INSERT OR IGNORE INTO {table} VALUES (?, ?, ?)",
            [(n, block_id, file_id) for block_id, ns in zip(ids, names, strict=True) for n in ns],
        )


def _recorded(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT name FROM _sqlite_migrations WHERE migration_set = ? ORDER BY id",
            (schema.MIGRATION_SET,),
        ).fetchall()
    finally:
        conn.close()
    return [r[0] for r in rows]


def test_a_new_index_records_every_named_step(repo: Path, open_index: Callable[..., Index]) -> None:
    write(repo, "billing.py", SOURCE)
    idx = open_index(repo)
    idx.update()
    assert _recorded(idx.db_path) == [step.__name__ for step in schema.STEPS]
    assert idx.search("settle invoice")[0].name == "settle_invoice"


def test_a_legacy_index_is_adopted_without_rerunning_or_losing_rows(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    path = write(repo, "billing.py", SOURCE)
    db = repo / ".kiln" / "index.db"
    db.parent.mkdir()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript(LEGACY_DDL)
    st = path.stat()
    prepared = prepare("billing.py", chunk_file("billing.py", path.read_bytes()))
    conn.execute("BEGIN")
    _legacy_write(conn, "billing.py", st.st_mtime_ns, st.st_size, path.read_bytes(), prepared)
    conn.execute("INSERT INTO meta VALUES ('chunker', ?)", (schema.CHUNKER_VERSION,))
    made_here.write(conn)  # made under this account (an unmarked one is rebuilt instead)
    conn.execute("COMMIT")
    block_ids = conn.execute("SELECT id, start_line, end_line FROM blocks ORDER BY id").fetchall()
    conn.close()

    idx = open_index(repo)
    assert idx.search("invoice paid")[0].name == "settle_invoice"  # rows kept, no rebuild
    stats = idx.update()
    assert stats.files_indexed == 0  # mtime and size still match: nothing re-parsed
    assert _recorded(db) == [step.__name__ for step in schema.STEPS]
    check = sqlite3.connect(db)
    try:
        rows = check.execute("SELECT id, start_line, end_line FROM blocks ORDER BY id")
        assert rows.fetchall() == block_ids  # ids and line spans kept across m006's split
        legacy = check.execute(
            "SELECT count(*) FROM sqlite_master WHERE name = '_migrations'"
        ).fetchone()
        assert legacy == (0,)
    finally:
        check.close()
    idx.close()
    # opened again: the adopted file (whose tables' SQL is not a fresh index's) is trusted
    idx = open_index(repo)
    assert idx.search("invoice paid")[0].name == "settle_invoice"
    assert idx.update().files_indexed == 0
    assert not (repo / ".kiln" / "index.db.corrupt").exists()


def test_a_new_step_runs_once_on_an_existing_index(
    repo: Path, open_index: Callable[..., Index], monkeypatch
) -> None:
    write(repo, "billing.py", SOURCE)
    open_index(repo).close()
    calls: list[str] = []

    def m999_probe(db) -> None:  # a future migration
        calls.append("ran")
        db.table("probe").create({"id": int}, pk="id")

    monkeypatch.setattr(schema, "STEPS", (*schema.STEPS, m999_probe))
    open_index(repo).close()
    open_index(repo).close()
    assert calls == ["ran"]
    assert _recorded(repo / ".kiln" / "index.db")[-1] == "m999_probe"


def test_a_failing_step_leaves_nothing_half_written(
    repo: Path, open_index: Callable[..., Index], monkeypatch
) -> None:
    open_index(repo).close()

    def m999_broken(db) -> None:
        db.table("half").create({"id": int}, pk="id")
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(schema, "STEPS", (*schema.STEPS, m999_broken))
    try:
        open_index(repo)
    except RuntimeError as exc:
        assert "disk on fire" in str(exc)
    else:
        raise AssertionError("the broken migration did not raise")
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert "half" not in tables
    assert "m999_broken" not in _recorded(repo / ".kiln" / "index.db")


def test_four_connections_opening_a_new_index_at_once_all_succeed(repo: Path) -> None:
    write(repo, "billing.py", SOURCE)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def open_one() -> None:
        start.wait()
        try:
            Index(repo).close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _recorded(repo / ".kiln" / "index.db") == [s.__name__ for s in schema.STEPS]


def test_blocks_is_a_view_that_takes_writes_into_both_tables(
    repo: Path, open_index: Callable[..., Index]
) -> None:
    """``blocks`` joins ``block_rows`` and ``block_lines``; a writer that still writes
    ``blocks`` (INSERT, UPDATE, DELETE) keeps the two tables in step."""
    write(repo, "billing.py", SOURCE)
    idx = open_index(repo)
    idx.update()
    conn = sqlite3.connect(idx.db_path, isolation_level=None)
    try:
        file_id, path = conn.execute("SELECT id, path FROM files").fetchone()
        values = dict.fromkeys(("language", "kind", "name", "signature", "docstring"), "x")
        values.update(hash="h", text="t", refs="", fts_path="", fts_name="", idents="")
        columns = ", ".join(values)
        conn.execute(
            f"INSERT INTO blocks (file_id, path, start_line, end_line, {columns})"
            f" VALUES (?, ?, 40, 44, {', '.join('?' * len(values))})",
            (file_id, path, *values.values()),
        )
        new_id = conn.execute("SELECT max(id) FROM block_rows").fetchone()[0]
        assert conn.execute("SELECT * FROM block_lines WHERE id = ?", (new_id,)).fetchone() == (
            new_id,
            40,
            44,
        )
        conn.execute("UPDATE blocks SET end_line = 45, name = 'y' WHERE id = ?", (new_id,))
        assert conn.execute(
            "SELECT name, start_line, end_line FROM blocks WHERE id = ?", (new_id,)
        ).fetchone() == ("y", 40, 45)
        conn.execute("DELETE FROM blocks WHERE id = ?", (new_id,))
        for table in ("block_rows", "block_lines"):
            assert conn.execute(
                f"SELECT count(*) FROM {table} WHERE id = ?", (new_id,)
            ).fetchone() == (0,)
    finally:
        conn.close()
    assert idx.search("settle invoice")[0].name == "settle_invoice"
