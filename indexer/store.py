"""The SQLite side of the index: schema migrations, atomic per-file replacement, raw reads.

One file, ``<root>/.kiln/index.db``, in WAL mode so searches never wait for the indexer.
Migrations are named functions recorded in ``_migrations``. FTS5 is an external-content table
over ``blocks``, maintained explicitly here, so text is stored once and a file's rows are
replaced with a handful of set-based statements (no per-row Python work beyond one
``executemany``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from indexer.blocks import Block
from indexer.tokens import camel_parts, name_terms, path_terms

if TYPE_CHECKING:
    import sqlite_utils

# Bumped when chunking changes shape: every file is re-parsed once.
CHUNKER_VERSION = "5"
FTS_COLUMNS = ("fts_path", "fts_name", "signature", "docstring", "text", "idents")


def _script(db: sqlite_utils.Database, sql: str) -> None:
    """Run statements one by one (``executescript`` would commit the migration's transaction)."""
    for statement in sql.split(";\n"):
        if statement.strip():
            db.execute(statement)


def _m001_initial(db: sqlite_utils.Database) -> None:
    _script(
        db,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE files (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            language TEXT NOT NULL,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            hash TEXT NOT NULL,
            blocks INTEGER NOT NULL,
            indexed_at REAL NOT NULL
        );
        CREATE TABLE blocks (
            id INTEGER PRIMARY KEY,
            file_id INTEGER NOT NULL,
            path TEXT NOT NULL,
            language TEXT NOT NULL,
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            signature TEXT NOT NULL,
            docstring TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            hash TEXT NOT NULL,
            text TEXT NOT NULL,
            refs TEXT NOT NULL,
            fts_path TEXT NOT NULL,
            fts_name TEXT NOT NULL,
            idents TEXT NOT NULL
        );
        CREATE INDEX blocks_file ON blocks(file_id);
        CREATE VIRTUAL TABLE blocks_fts USING fts5(
            fts_path, fts_name, signature, docstring, text, idents,
            content='blocks', content_rowid='id', tokenize='porter unicode61'
        );
        CREATE TABLE defs (name TEXT NOT NULL, block_id INTEGER NOT NULL, file_id INTEGER NOT NULL,
                           PRIMARY KEY (name, block_id)) WITHOUT ROWID;
        CREATE INDEX defs_file ON defs(file_id);
        CREATE TABLE refs (name TEXT NOT NULL, block_id INTEGER NOT NULL, file_id INTEGER NOT NULL,
                           PRIMARY KEY (name, block_id)) WITHOUT ROWID;
        CREATE INDEX refs_file ON refs(file_id);
        """,
    )


def _m002_fts_vocab(db: sqlite_utils.Database) -> None:
    """Term document counts, used to drop query terms that match most of the repository."""
    db.execute("CREATE VIRTUAL TABLE blocks_vocab USING fts5vocab(blocks_fts, 'row')")


def _m003_fts_merge(db: sqlite_utils.Database) -> None:
    """Merge FTS segments less eagerly: bulk indexing was dominated by segment merges."""
    db.execute("INSERT INTO blocks_fts(blocks_fts, rank) VALUES ('automerge', 8)")
    db.execute("INSERT INTO blocks_fts(blocks_fts, rank) VALUES ('crisismerge', 64)")


def _m004_history(db: sqlite_utils.Database) -> None:
    """Commits on HEAD (message, files touched), for the history signal (see history.py)."""
    _script(
        db,
        """
        CREATE TABLE commits (
            id INTEGER PRIMARY KEY,
            sha TEXT NOT NULL UNIQUE,
            time INTEGER NOT NULL,
            message TEXT NOT NULL,
            files INTEGER NOT NULL
        );
        CREATE TABLE commit_files (commit_id INTEGER NOT NULL, path TEXT NOT NULL,
                                   PRIMARY KEY (commit_id, path)) WITHOUT ROWID;
        CREATE INDEX commit_files_path ON commit_files(path);
        CREATE VIRTUAL TABLE commits_fts USING fts5(message, tokenize='porter unicode61')
        """,
    )


def _m005_history_vocab(db: sqlite_utils.Database) -> None:
    """Commit-message term counts, so a search can leave out words most commits contain."""
    db.execute("CREATE VIRTUAL TABLE commits_vocab USING fts5vocab(commits_fts, 'row')")


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    _m001_initial,
    _m002_fts_vocab,
    _m003_fts_merge,
    _m004_history,
    _m005_history_vocab,
]


def connect(db_path: Path, busy_timeout: float) -> sqlite3.Connection:
    conn = sqlite3.connect(
        str(db_path), timeout=busy_timeout, check_same_thread=False, isolation_level=None
    )
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute("PRAGMA cache_size=-65536")
    conn.execute("PRAGMA mmap_size=268435456")
    return conn


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the named migrations not yet recorded, each in its own transaction.

    sqlite-utils (which pulls in numpy when present: ~1 s) is imported only when a migration
    is pending, so opening an up-to-date index stays cheap for one-shot CLI searches."""
    conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    pending = [fn for fn in MIGRATIONS if fn.__name__.lstrip("_") not in done]
    if pending:
        import sqlite_utils

        db = sqlite_utils.Database(conn)
    for fn in pending:
        name = fn.__name__.lstrip("_")
        conn.execute("BEGIN IMMEDIATE")
        try:
            fn(db)
            conn.execute("INSERT INTO _migrations VALUES (?, ?)", (name, time.time()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    version = conn.execute("SELECT value FROM meta WHERE key='chunker'").fetchone()
    if version is None or version[0] != CHUNKER_VERSION:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE files SET hash = '', mtime_ns = -1")  # forces a re-parse
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('chunker', ?)", (CHUNKER_VERSION,))
        conn.execute("COMMIT")


def delete_file_rows(conn: sqlite3.Connection, file_id: int) -> None:
    """Remove everything one file contributed (call inside a transaction)."""
    cols = ", ".join(FTS_COLUMNS)
    conn.execute(
        f"INSERT INTO blocks_fts(blocks_fts, rowid, {cols}) SELECT 'delete', id, {cols} FROM blocks WHERE file_id = ?",
        (file_id,),
    )
    conn.execute("DELETE FROM blocks WHERE file_id = ?", (file_id,))
    conn.execute("DELETE FROM defs WHERE file_id = ?", (file_id,))
    conn.execute("DELETE FROM refs WHERE file_id = ?", (file_id,))


@dataclass
class Prepared:
    """A file's rows, built where the file was chunked (a worker process during full runs) so
    the writer only binds parameters."""

    rows: list[tuple]  # block columns after (id, file_id), in BLOCK_COLUMNS order
    defs: list[list[str]]  # per block: lower-cased names it defines
    refs: list[list[str]]  # per block: lower-cased names it references

    def __len__(self) -> int:
        return len(self.rows)


BLOCK_COLUMNS = (
    "path, language, kind, name, signature, docstring, start_line, end_line, hash, text, refs, "
    "fts_path, fts_name, idents"
)


def prepare(rel: str, blocks: list[Block], known: frozenset[str] = frozenset()) -> Prepared:
    """Rows for ``blocks``; blocks whose hash is in ``known`` are probably about to be kept as
    they are, so their derived search columns (name parts, camelCase parts) are left as
    ``None`` and computed by ``write_file`` only if such a row is inserted after all (a block
    pasted twice: the second copy has nothing to be kept as)."""
    ptext = path_terms(rel)
    rows = []
    defs = []
    refs = []
    for b in blocks:
        ref_names = sorted({n.lower() for n in b.refs})
        rows.append(
            (
                rel,
                b.language,
                b.kind,
                b.name,
                b.signature,
                b.docstring,
                b.start_line,
                b.end_line,
                b.hash,
                b.text,
                " ".join(ref_names),
                ptext,
                None if b.hash in known else name_terms(b.name),
                None if b.hash in known else camel_parts(b.text),
            )
        )
        defs.append(sorted({n.lower() for n in b.defines}))
        refs.append(ref_names)
    return Prepared(rows, defs, refs)


def write_file(
    conn: sqlite3.Connection,
    rel: str,
    language: str,
    mtime_ns: int,
    size: int,
    digest: str,
    prepared: Prepared,
) -> None:
    """Replace one file's rows (call inside a transaction: all of it lands or none)."""
    count = len(prepared.rows)
    fresh = list(range(count))
    row = conn.execute("SELECT id FROM files WHERE path = ?", (rel,)).fetchone()
    if row is not None:
        file_id = row[0]
        fresh = _reuse_unchanged(conn, file_id, prepared)
        conn.execute(
            "UPDATE files SET language=?, mtime_ns=?, size=?, hash=?, blocks=?, indexed_at=? WHERE id=?",
            (language, mtime_ns, size, digest, count, time.time(), file_id),
        )
    else:
        cur = conn.execute(
            "INSERT INTO files (path, language, mtime_ns, size, hash, blocks, indexed_at) VALUES (?,?,?,?,?,?,?)",
            (rel, language, mtime_ns, size, digest, count, time.time()),
        )
        file_id = cur.lastrowid
    if not fresh:
        return
    first = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM blocks").fetchone()[0]
    ids = {i: first + n for n, i in enumerate(fresh)}
    conn.executemany(
        f"INSERT INTO blocks (id, file_id, {BLOCK_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [(ids[i], file_id, *_complete(prepared.rows[i])) for i in fresh],
    )
    cols = ", ".join(FTS_COLUMNS)
    conn.execute(
        f"INSERT INTO blocks_fts(rowid, {cols}) SELECT id, {cols} FROM blocks WHERE id >= ?",
        (first,),
    )
    conn.executemany(
        "INSERT OR IGNORE INTO defs VALUES (?, ?, ?)",
        [(n, ids[i], file_id) for i in fresh for n in prepared.defs[i]],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO refs VALUES (?, ?, ?)",
        [(n, ids[i], file_id) for i in fresh for n in prepared.refs[i]],
    )


_HASH, _NAME, _KIND, _START, _END, _TEXT = 8, 3, 2, 6, 7, 9  # positions in a prepared row


def _complete(row: tuple) -> tuple:
    """A prepared row with the derived columns ``prepare`` skipped filled in."""
    if row[-1] is not None:
        return row
    return (*row[:-2], name_terms(row[_NAME]), camel_parts(row[_TEXT]))


def _reuse_unchanged(conn: sqlite3.Connection, file_id: int, prepared: Prepared) -> list[int]:
    """Keep the rows of blocks whose text did not change (only their lines may move), delete
    the rest; returns the indexes of prepared rows still to insert. An edit then costs FTS
    work for the edited blocks only, which is what keeps ``update_file`` fast."""
    old: dict[tuple, list[int]] = {}
    for block_id, h, name, kind in conn.execute(
        "SELECT id, hash, name, kind FROM blocks WHERE file_id = ?", (file_id,)
    ):
        old.setdefault((h, name, kind), []).append(block_id)
    moved: list[tuple[int, int, int]] = []
    fresh: list[int] = []
    for i, r in enumerate(prepared.rows):
        same = old.get((r[_HASH], r[_NAME], r[_KIND]))
        if same:
            moved.append((r[_START], r[_END], same.pop()))
        else:
            fresh.append(i)
    stale = [block_id for ids in old.values() for block_id in ids]
    if stale:
        cols = ", ".join(FTS_COLUMNS)
        marks = ",".join("?" * len(stale))
        conn.execute(
            f"INSERT INTO blocks_fts(blocks_fts, rowid, {cols}) SELECT 'delete', id, {cols} FROM blocks WHERE id IN ({marks})",
            stale,
        )
        conn.execute(f"DELETE FROM blocks WHERE id IN ({marks})", stale)
        conn.execute(
            f"DELETE FROM defs WHERE file_id = ? AND block_id IN ({marks})", [file_id, *stale]
        )
        conn.execute(
            f"DELETE FROM refs WHERE file_id = ? AND block_id IN ({marks})", [file_id, *stale]
        )
    conn.executemany("UPDATE blocks SET start_line = ?, end_line = ? WHERE id = ?", moved)
    return fresh


def remove_file(conn: sqlite3.Connection, rel: str) -> bool:
    row = conn.execute("SELECT id FROM files WHERE path = ?", (rel,)).fetchone()
    if row is None:
        return False
    delete_file_rows(conn, row[0])
    conn.execute("DELETE FROM files WHERE id = ?", (row[0],))
    return True
