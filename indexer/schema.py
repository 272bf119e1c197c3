"""The index database's schema: connection settings and named migrations.

Migrations are functions registered, in order, with a ``sqlite_migrate.Migrations`` set and
recorded in its ``_sqlite_migrations`` table; plain tables are created with sqlite-utils, the
FTS5 tables (external content over ``blocks``, maintained by ``store``), their vocabulary views
and the WITHOUT ROWID symbol tables with the SQL sqlite-utils has no words for. ``blocks`` is a
view over ``block_rows`` and ``block_lines`` (``m006_block_lines``). Index files
written before the move (names recorded in a ``_migrations`` table) are adopted as they are:
the same names, so nothing re-runs. A changed chunker forces every file to be re-parsed once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from indexer import filelist, generated, language_changes, source_text
from indexer.errors import IndexFromNewerKiln
from kiln_errors.sqlite_common import (
    MIGRATIONS_TABLE,
    adopt_legacy_record,
    enable_wal,
    has_table,
    immediate,
    load_sqlite_utils,
    newer_steps,
)

if TYPE_CHECKING:
    import sqlite_utils
    from sqlite_migrate import Migrations

# Bumped when chunking changes shape: every file is re-parsed once. A new language or a
# changed query needs no bump: ``language_changes`` re-parses that language's files only.
CHUNKER_VERSION = "5"
MIGRATION_SET = "kiln.index"
LEGACY_TABLE = "_migrations"  # the hand-written migrator's record, before sqlite-migrate


def m001_initial(db: sqlite_utils.Database) -> None:
    db.table("meta").create({"key": str, "value": str}, pk="key")
    db.table("files").create(
        {
            "id": int,
            "path": str,
            "language": str,
            "mtime_ns": int,
            "size": int,
            "hash": str,
            "blocks": int,
            "indexed_at": float,
        },
        pk="id",
        not_null={"path", "language", "mtime_ns", "size", "hash", "blocks", "indexed_at"},
    )
    db.table("files").create_index(["path"], unique=True)
    text = ("path", "language", "kind", "name", "signature", "docstring", "hash", "text", "refs")
    columns: dict[str, type] = {"id": int, "file_id": int}
    columns.update(dict.fromkeys(text[:6], str))
    columns.update({"start_line": int, "end_line": int})
    columns.update(dict.fromkeys((*text[6:], "fts_path", "fts_name", "idents"), str))
    db.table("blocks").create(columns, pk="id", not_null=set(columns) - {"id"})
    db.table("blocks").create_index(["file_id"], index_name="blocks_file")
    db.execute(
        "CREATE VIRTUAL TABLE blocks_fts USING fts5("
        "fts_path, fts_name, signature, docstring, text, idents, "
        "content='blocks', content_rowid='id', tokenize='porter unicode61')"
    )
    for table in ("defs", "refs"):  # name -> block: a covering key, no rowid needed
        db.execute(
            f"CREATE TABLE {table} (name TEXT NOT NULL, block_id INTEGER NOT NULL, "
            "file_id INTEGER NOT NULL, PRIMARY KEY (name, block_id)) WITHOUT ROWID"
        )
        db.table(table).create_index(["file_id"], index_name=f"{table}_file")


def m002_fts_vocab(db: sqlite_utils.Database) -> None:
    """Term document counts, used to drop query terms that match most of the repository."""
    db.execute("CREATE VIRTUAL TABLE blocks_vocab USING fts5vocab(blocks_fts, 'row')")


def m003_fts_merge(db: sqlite_utils.Database) -> None:
    """Merge FTS segments less eagerly: bulk indexing was dominated by segment merges."""
    db.execute("INSERT INTO blocks_fts(blocks_fts, rank) VALUES ('automerge', 8)")
    db.execute("INSERT INTO blocks_fts(blocks_fts, rank) VALUES ('crisismerge', 64)")


def m004_history(db: sqlite_utils.Database) -> None:
    """Commits on HEAD (message, files touched), for the history signal (see history.py)."""
    db.table("commits").create(
        {"id": int, "sha": str, "time": int, "message": str, "files": int},
        pk="id",
        not_null={"sha", "time", "message", "files"},
    )
    db.table("commits").create_index(["sha"], unique=True)
    db.execute(
        "CREATE TABLE commit_files (commit_id INTEGER NOT NULL, path TEXT NOT NULL, "
        "PRIMARY KEY (commit_id, path)) WITHOUT ROWID"
    )
    db.table("commit_files").create_index(["path"], index_name="commit_files_path")
    db.execute("CREATE VIRTUAL TABLE commits_fts USING fts5(message, tokenize='porter unicode61')")


def m005_history_vocab(db: sqlite_utils.Database) -> None:
    """Commit-message term counts, so a search can leave out words most commits contain."""
    db.execute("CREATE VIRTUAL TABLE commits_vocab USING fts5vocab(commits_fts, 'row')")


ROW_COLUMNS = (  # of ``block_rows``: every column of ``blocks`` but the line span
    "id, file_id, path, language, kind, name, signature, docstring, hash, text, refs, "
    "fts_path, fts_name, idents"
)
BLOCKS_VIEW = (
    "CREATE VIEW blocks AS SELECT r.id, r.file_id, r.path, r.language, r.kind, r.name, "
    "r.signature, r.docstring, l.start_line, l.end_line, r.hash, r.text, r.refs, r.fts_path, "
    "r.fts_name, r.idents FROM block_rows r JOIN block_lines l ON l.id = r.id"
)


def m006_block_lines(db: sqlite_utils.Database) -> None:
    """Line spans in a narrow table of their own (``block_lines``), the rest of a block in
    ``block_rows``, and ``blocks`` a view joining the two with the columns it had before.
    An edit that adds a line moves every block below it: rewriting two integers per block in
    ``block_lines`` touches a page or two, where rewriting ``blocks`` rows (texts and all)
    touched a page per block or two, most of what an edit wrote. The view takes writes too
    (INSTEAD OF triggers); the store writes the two tables directly."""
    db.execute(
        "CREATE TABLE block_lines (id INTEGER PRIMARY KEY, start_line INTEGER NOT NULL, "
        "end_line INTEGER NOT NULL)"
    )
    db.execute("INSERT INTO block_lines SELECT id, start_line, end_line FROM blocks")
    db.execute("ALTER TABLE blocks RENAME TO block_rows")
    db.execute("ALTER TABLE block_rows DROP COLUMN start_line")
    db.execute("ALTER TABLE block_rows DROP COLUMN end_line")
    db.execute(BLOCKS_VIEW)
    columns = ROW_COLUMNS.split(", ")
    new = ", ".join(f"NEW.{c}" for c in columns)
    sets = ", ".join(f"{c} = NEW.{c}" for c in columns[1:])
    db.execute(
        "CREATE TRIGGER blocks_insert INSTEAD OF INSERT ON blocks BEGIN "
        f"INSERT INTO block_rows ({ROW_COLUMNS}) VALUES ({new}); "
        "INSERT INTO block_lines VALUES (last_insert_rowid(), NEW.start_line, NEW.end_line); END"
    )
    db.execute(
        "CREATE TRIGGER blocks_update INSTEAD OF UPDATE ON blocks BEGIN "
        f"UPDATE block_rows SET {sets} WHERE id = OLD.id; "
        "UPDATE block_lines SET start_line = NEW.start_line, end_line = NEW.end_line "
        "WHERE id = OLD.id; END"
    )
    db.execute(
        "CREATE TRIGGER blocks_delete INSTEAD OF DELETE ON blocks BEGIN "
        "DELETE FROM block_rows WHERE id = OLD.id; DELETE FROM block_lines WHERE id = OLD.id; END"
    )


def m007_file_words(db: sqlite_utils.Database) -> None:
    """The file list (``filelist``): one row of distinct words per file, so a search can score
    every query term over files where block-level BM25 can afford only the rarest; filled in
    from the stored block rows."""
    db.execute(filelist.CREATE)
    db.execute(filelist.CREATE_VOCAB)
    filelist.backfill(db.conn)


def m008_file_words_stale(db: sqlite_utils.Database) -> None:
    """Which files' rows in the file list an edit has made out of date (``filelist.flush``)."""
    db.execute(filelist.CREATE_STALE)


def m009_files_generated(db: sqlite_utils.Database) -> None:
    """Whether each file says a generator wrote it (``generated``): written with the file's
    rows from now on, filled in here from the stored ones."""
    db.execute("ALTER TABLE files ADD COLUMN generated INTEGER NOT NULL DEFAULT 0")
    generated.backfill(db.conn)


# In order; a name, once released, never changes (it is what an index file records).
STEPS = (
    m001_initial,
    m002_fts_vocab,
    m003_fts_merge,
    m004_history,
    m005_history_vocab,
    m006_block_lines,
    m007_file_words,
    m008_file_words_stale,
    m009_files_generated,
)


def migration_set() -> Migrations:
    """The steps registered with sqlite-migrate (built on demand: importing sqlite-utils costs
    ~0.2 s, which a one-shot ``kiln search`` on an up-to-date index should not pay)."""
    load_sqlite_utils()  # first: sqlite-migrate imports it, and it should come without numpy
    from sqlite_migrate import Migrations

    migrations = Migrations(MIGRATION_SET)
    for step in STEPS:
        migrations(name=step.__name__)(step)
    return migrations


def connect(db_path: object, busy_timeout: float) -> sqlite3.Connection:
    conn = sqlite3.connect(
        str(db_path), timeout=busy_timeout, check_same_thread=False, isolation_level=None
    )
    enable_wal(conn, busy_timeout)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute("PRAGMA cache_size=-65536")
    # No memory-mapped reads: on an index file written in place they made a search right after
    # an edit cost 2-3 ms CPU more on SQLAlchemy, and gained nothing on an unchanged index
    # (bench/README.md, round three, "the search after an edit").
    conn.execute("PRAGMA mmap_size=0")
    return conn


def connect_read_only(db_path: object) -> sqlite3.Connection:
    """A connection that never writes, for an index on a disk nothing can change (a read-only
    mount): ``immutable=1``, as WAL mode cannot even be read there without its ``-shm``."""
    uri = f"{Path(str(db_path)).resolve().as_uri()}?immutable=1"
    return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)


def current(conn: sqlite3.Connection) -> bool:
    """Whether the file needs no step of ``migrate``: a read-only index can be searched."""
    if _pending_names(conn):
        return False
    version = conn.execute("SELECT value FROM meta WHERE key='chunker'").fetchone()
    return version is not None and version[0] == CHUNKER_VERSION


def migrate(
    conn: sqlite3.Connection, on_create: Callable[[sqlite3.Connection], None] | None = None
) -> None:
    """Apply the steps not yet recorded, all in one IMMEDIATE transaction (two processes
    opening a new index at once: the second waits, then finds nothing to do); then force a
    re-parse if the chunker changed, or of the files whose language changed
    (``language_changes``: a new grammar re-parses its files only). ``on_create`` runs in
    that transaction when it creates the index's tables (``made_here`` marks a new file)."""
    newer = newer_steps(conn, MIGRATION_SET, (step.__name__ for step in STEPS))
    if newer:  # never written with the older shape: ``database`` sets the file aside
        raise IndexFromNewerKiln(f"written by a newer Kiln (steps {', '.join(newer)})")
    if _pending_names(conn):
        db = load_sqlite_utils().Database(conn)
        migrations = migration_set()
        with immediate(conn):
            new = not has_table(conn, "meta")
            adopt_legacy_record(
                conn, db, migrations, legacy_table=LEGACY_TABLE, applied_column="applied_at"
            )
            migrations.apply(db)  # each step in a savepoint, with its record
            if new and on_create is not None:
                on_create(conn)
    version = conn.execute("SELECT value FROM meta WHERE key='chunker'").fetchone()
    if version is None or version[0] != CHUNKER_VERSION:
        with immediate(conn):
            conn.execute("UPDATE files SET hash = '', mtime_ns = -1")  # forces a re-parse
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('chunker', ?)", (CHUNKER_VERSION,))
            language_changes.record(conn)
    elif language_changes.stale(conn) is not None:
        with immediate(conn):  # asked again: another process may have done it meanwhile
            recorded = language_changes.stale(conn)
            if recorded is not None:
                language_changes.mark(conn, recorded)
                language_changes.record(conn)
    _reread_if_rules_changed(conn)  # after a chunker change too: it was reset by then


def _reread_if_rules_changed(conn: sqlite3.Connection) -> None:
    """Files are read by other ``source_text`` rules than the index's: each is hashed again on
    the next update (not parsed: only a file whose text now reads differently is)."""
    query = "SELECT value FROM meta WHERE key='source_text'"
    if (conn.execute(query).fetchone() or [None])[0] == source_text.RULES:
        return
    with immediate(conn):
        if (conn.execute(query).fetchone() or [None])[0] != source_text.RULES:
            conn.execute("UPDATE files SET mtime_ns = -1")
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('source_text', ?)", (source_text.RULES,)
            )


def _pending_names(conn: sqlite3.Connection) -> set[str]:
    """Steps not recorded yet, read with plain SQL (no sqlite-utils import on the fast path)."""
    names = {step.__name__ for step in STEPS}
    if not has_table(conn, MIGRATIONS_TABLE):
        return names
    done = conn.execute(
        f"SELECT name FROM {MIGRATIONS_TABLE} WHERE migration_set = ?", (MIGRATION_SET,)
    )
    return names - {row[0] for row in done}
