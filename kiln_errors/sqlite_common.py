"""What every SQLite file Kiln shares (the index, the session store, the registry) is opened
and migrated with.

``PRAGMA journal_mode=WAL`` on a new file takes an exclusive lock and answers "database is
locked" at once when another connection holds it: SQLite's busy handler does not run for a
journal-mode change, so ``enable_wal`` retries for as long as the connection's own busy timeout
would have waited. Migrations run in one IMMEDIATE transaction (``immediate``), so two
processes opening a new file at once do not both start a read and then fail to upgrade it: the
second waits, then finds nothing to do. Files written before the move to sqlite-migrate
recorded their steps in a hand-written ``_migrations`` table; ``adopt_legacy_record`` carries
those names over so nothing re-runs. A file that records steps this Kiln does not know was
written by a newer Kiln (``newer_steps``): each store refuses it or sets it aside, never writes
to it with the older shape. sqlite-utils is loaded through ``load_sqlite_utils``, without numpy
or pandas (see there).
"""

from __future__ import annotations

import importlib
import importlib.abc
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

__all__ = [
    "adopt_legacy_record",
    "enable_wal",
    "has_table",
    "immediate",
    "is_corrupt",
    "load_sqlite_utils",
    "newer_steps",
]

MIGRATIONS_TABLE = "_sqlite_migrations"  # sqlite-migrate's record


# What sqlite-utils imports if it can, only to take their scalar types in ``insert``: Kiln never
# passes it one, and numpy's import alone (with its BLAS threads) was ~0.12 s of CPU in every
# `kiln run`, `kiln index` and `kiln search`, on a 0.35-0.65 s process.
_NOT_FOR_SQLITE_UTILS = frozenset({"numpy", "pandas"})


class _RefuseInThisThread(importlib.abc.MetaPathFinder):
    """Answers "no such module" for ``names``, to the thread that set it up only: another
    thread importing numpy meanwhile (the embedded model's runtime) still gets it."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names
        self.thread = threading.get_ident()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname.partition(".")[0] in self.names and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def load_sqlite_utils() -> ModuleType:
    """The ``sqlite_utils`` module, imported the first time without numpy or pandas (already
    imported, they are used: nothing is undone). Every Kiln module takes sqlite-utils (and
    sqlite-migrate, which imports it) through here, so the first import is this one."""
    if "sqlite_utils" in sys.modules:  # import_module still waits while another thread loads it
        return importlib.import_module("sqlite_utils")
    finder = _RefuseInThisThread(_NOT_FOR_SQLITE_UTILS)
    sys.meta_path.insert(0, finder)
    try:
        return importlib.import_module("sqlite_utils")
    finally:
        sys.meta_path.remove(finder)


def is_corrupt(exc: BaseException) -> bool:
    """SQLite says the file itself is damaged (or no database at all): setting it aside and
    starting afresh is the cure. A full disk, a read-only folder or a lock is not: the file is
    fine, and moving it away would hide the user's data for nothing."""
    text = str(exc).lower()
    return any(
        m in text for m in ("not a database", "malformed", "corrupt", "disk image", "file format")
    )


def enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Put ``conn``'s file in WAL mode, waiting up to ``timeout`` seconds for other openers."""
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One IMMEDIATE transaction on an autocommit connection: committed, or rolled back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def newer_steps(conn: sqlite3.Connection, migration_set: str, known: Iterable[str]) -> list[str]:
    """The steps of ``migration_set`` the file records but ``known`` lacks (a newer Kiln's)."""
    if not has_table(conn, MIGRATIONS_TABLE):
        return []
    rows = conn.execute(
        f"SELECT name FROM {MIGRATIONS_TABLE} WHERE migration_set = ? ORDER BY rowid",
        (migration_set,),
    ).fetchall()
    names = set(known)
    return [row[0] for row in rows if row[0] not in names]


def adopt_legacy_record(
    conn: sqlite3.Connection, db: Any, migrations: Any, *, legacy_table: str, applied_column: str
) -> None:
    """Move the step names an older Kiln recorded in ``legacy_table`` (with the Unix time in
    ``applied_column``) into the table of the sqlite-migrate set ``migrations`` (``db`` is the
    sqlite-utils view of ``conn``), then drop the old table. Call inside the transaction that
    applies the steps."""
    if not has_table(conn, legacy_table):
        return
    migrations.ensure_migrations_table(db)
    known = {step.name for step in migrations.pending(db)}
    rows = conn.execute(f"SELECT name, {applied_column} FROM {legacy_table}").fetchall()
    for name, applied in rows:
        if name in known:
            conn.execute(
                f"INSERT OR IGNORE INTO {MIGRATIONS_TABLE} (migration_set, name, applied_at) "
                "VALUES (?, ?, datetime(?, 'unixepoch'))",
                (migrations.name, name, applied),
            )
    conn.execute(f"DROP TABLE {legacy_table}")
