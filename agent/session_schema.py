"""The session store's schema: named migrations recorded in a table.

Each step is a function registered, in order, with a ``sqlite_migrate.Migrations`` set and
recorded in its ``_sqlite_migrations`` table; tables are created with sqlite-utils, the FTS5
search table with the SQL sqlite-utils has no words for. Stores written before the move
(names recorded in a ``_migrations`` table) are adopted as they are: the same step names, so
nothing re-runs and every row is kept. A store that records steps this Kiln lacks was written
by a newer Kiln: it is refused, untouched, rather than written with the older shape.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from agent.errors import ConfigError
from kiln_errors.sqlite_common import (
    adopt_legacy_record,
    has_table,
    immediate,
    load_sqlite_utils,
    newer_steps,
)

if TYPE_CHECKING:
    import sqlite_utils
    from sqlite_migrate import Migrations

MIGRATION_SET = "kiln.sessions"
LEGACY_TABLE = "_migrations"  # the hand-written migrator's record, before sqlite-migrate


def m001_initial(db: sqlite_utils.Database) -> None:
    db.table("sessions").create(
        {"id": str, "root": str, "created": float, "updated": float, "title": str,
         "provider": str, "model": str, "mode": str, "status": str, "epoch": int, "state": str},
        pk="id",
        not_null={"root", "created", "updated", "title", "provider", "model", "mode", "status",
                  "epoch", "state"},
        defaults={"title": "", "provider": "", "model": "", "mode": "ask", "status": "idle",
                  "epoch": 0, "state": "{}"},
    )  # fmt: skip
    db.table("messages").create(
        {"session_id": str, "epoch": int, "seq": int, "json": str},
        pk=("session_id", "epoch", "seq"),
        not_null={"session_id", "epoch", "seq", "json"},
    )
    db.table("messages").create_index(
        ["session_id", "epoch", "seq"], index_name="messages_by_session"
    )
    db.table("requests").create(
        {"session_id": str, "step": int, "turn": int, "epoch": int, "message_count": int,
         "prefix_sha": str, "deferred": str, "max_tokens": int, "created": float},
        pk=("session_id", "step"),
        not_null={"session_id", "step", "turn", "epoch", "message_count", "prefix_sha",
                  "deferred", "max_tokens", "created"},
    )  # fmt: skip
    db.table("prefixes").create({"sha": str, "json": str}, pk="sha", not_null={"json"})
    usage = {"session_id": str, "step": int, "turn": int, "model": str, "input_tokens": int,
             "cache_read_tokens": int, "cache_write_tokens": int, "output_tokens": int,
             "cost_usd": float, "created": float}  # fmt: skip
    db.table("usage").create(usage, pk=("session_id", "step"), not_null=set(usage))
    events = {"session_id": str, "seq": int, "kind": str, "json": str, "created": float}
    db.table("events").create(events, pk=("session_id", "seq"), not_null=set(events))


def m002_search(db: sqlite_utils.Database) -> None:
    """Full-text search over transcripts and compaction summaries (``kiln sessions search``)."""
    db.execute(
        "CREATE VIRTUAL TABLE session_text USING fts5(session_id UNINDEXED, kind UNINDEXED, "
        "text, tokenize = 'porter unicode61')"
    )


def m003_compactions(db: sqlite_utils.Database) -> None:
    """One row per compaction (agent.compaction): which epoch it started and what it removed."""
    columns = {"session_id": str, "epoch": int, "created": float, "tier": int, "json": str}
    db.table("compactions").create(columns, pk=("session_id", "epoch"), not_null=set(columns))


# In order; a name, once released, never changes (it is what a store file records).
STEPS = (m001_initial, m002_search, m003_compactions)


def migration_set() -> Migrations:
    load_sqlite_utils()  # first: sqlite-migrate imports it, and it should come without numpy
    from sqlite_migrate import Migrations

    migrations = Migrations(MIGRATION_SET)
    for step in STEPS:
        migrations(name=step.__name__)(step)
    return migrations


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the steps not yet recorded, all in one IMMEDIATE transaction (two processes
    opening a new store at once: the second waits, then finds nothing to do)."""
    newer = newer_steps(conn, MIGRATION_SET, (step.__name__ for step in STEPS))
    if newer:
        raise ConfigError(
            f"the session store {database_path(conn)} was written by a newer Kiln "
            f"(steps {', '.join(newer)})",
            hint="upgrade Kiln, or point KILN_HOME at another folder",
        )
    db = load_sqlite_utils().Database(conn)
    migrations = migration_set()
    if not has_table(conn, LEGACY_TABLE) and not migrations.pending(db):
        return
    with immediate(conn):
        adopt_legacy_record(
            conn, db, migrations, legacy_table=LEGACY_TABLE, applied_column="applied"
        )
        migrations.apply(db)  # each step in a savepoint, with its record


def database_path(conn: sqlite3.Connection) -> str:
    row = conn.execute("PRAGMA database_list").fetchone()
    return str(row[2]) if row and row[2] else "(in memory)"
