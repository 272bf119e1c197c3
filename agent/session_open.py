"""Opening the session store's SQLite file, whatever state it is in.

A store another process is migrating waits; a locked one, a full disk and a folder in the
file's place are one line each and leave the file alone; a damaged store (or another program's
file whose tables clash with the store's) is set aside and a new one started, so it cannot take
every command down; a store on a read-only disk is read as it is by the commands that only
read. Another application's database (tables, but no record of the store's migrations: a
KILN_HOME shared with another tool, a path mixed up) is refused in one line before anything is
written to it, not even WAL mode: it is that application's data, not Kiln's to move or adopt.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from pathlib import Path

from agent.errors import ConfigError, KilnError
from agent.session_schema import LEGACY_TABLE, MIGRATION_SET, migrate
from kiln_errors.sqlite_common import MIGRATIONS_TABLE, enable_wal, is_corrupt

log = logging.getLogger("kiln.sessions")


def open_store(path: Path, *, reading: bool) -> tuple[sqlite3.Connection, str]:
    """The connection, and a line saying the store was damaged and set aside (else "")."""
    try:
        _refuse_foreign(path)
        return _open(path), ""
    except sqlite3.DatabaseError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise KilnError(
                f"the session store {path} is locked: {exc}",
                hint="another Kiln process holds it; retry in a moment",
            ) from None
        if reading and path.is_file() and not os.access(path.parent, os.W_OK):
            db = _open_as_it_is(path)
            log.warning("kiln: %s is read-only: reading the session store as it is", path.parent)
            return db, ""
        if path.is_dir():
            raise KilnError(
                f"{path} is a folder, not the session store",
                hint="move it away; Kiln starts a new store there",
            ) from None
        if not (is_corrupt(exc) or is_foreign(exc)):  # a full disk, a read-only home…
            raise KilnError(
                f"cannot open the session store {path}: {exc}",
                hint="free disk space, or make KILN_HOME a writable folder",
            ) from None
        kept = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            old = Path(f"{path}{suffix}")
            if old.exists():
                old.rename(Path(f"{kept}{suffix}"))
        recovered = (
            f"the session store was damaged ({exc}); it was moved to {kept} and a new one started"
        )
        log.warning("kiln: %s", recovered)
        return _open(path), recovered


def _refuse_foreign(path: Path) -> None:
    """Refuse a file with tables but no record of the store's migrations (``kiln.sessions``
    steps in ``_sqlite_migrations``, or the earlier migrator's ``_migrations`` beside a
    ``sessions`` table), read on a connection that writes nothing. A missing or empty file, or
    one with no table yet, is a new store; a damaged one raises here as it would in ``_open``."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        tables = [
            row[0]
            for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1")
        ]
        if not tables:
            return
        if MIGRATIONS_TABLE in tables:
            sql = f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE migration_set = ? LIMIT 1"
            if db.execute(sql, (MIGRATION_SET,)).fetchone():
                return
        if LEGACY_TABLE in tables and "sessions" in tables:
            return
    finally:
        db.close()
    shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
    raise ConfigError(
        f"{path} is not Kiln's session store (it holds another application's tables: {shown});"
        " nothing was written to it",
        hint="move that file elsewhere, or point KILN_HOME at another folder",
    )


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False, timeout=30, isolation_level=None)
    try:
        enable_wal(db, 30)
        db.execute("PRAGMA busy_timeout=30000")
        db.execute("PRAGMA quick_check(1)").fetchone()
        migrate(db)
    except BaseException:
        db.close()
        raise
    return db


def _open_as_it_is(path: Path) -> sqlite3.Connection:
    """A connection that never writes: ``immutable``, as a WAL-mode file cannot be read without
    creating its ``-shm`` otherwise. A store that needs a migration is refused."""
    uri = f"{path.resolve().as_uri()}?immutable=1"
    db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
    try:
        migrate(db)
    except sqlite3.Error as exc:
        db.close()
        raise KilnError(
            f"cannot read the session store {path}: {exc}",
            hint="it needs writing (an upgrade or a repair): make KILN_HOME writable once",
        ) from None
    return db


def is_foreign(exc: BaseException) -> bool:
    """Another program's SQLite file (or a hand-made one): its tables are not the store's."""
    text = str(exc).lower()
    return any(m in text for m in ("no such table", "no such column", "already exists"))
