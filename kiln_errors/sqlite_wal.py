"""Switching a SQLite file to WAL when several connections open it at once.

``PRAGMA journal_mode=WAL`` on a new file takes an exclusive lock and answers "database is
locked" at once when another connection holds it: SQLite's busy handler does not run for a
journal-mode change. Every store that opens a shared file (the index, the session store, the
registry) goes through ``enable_wal``, which retries for as long as the connection's own busy
timeout would have waited.
"""

from __future__ import annotations

import sqlite3
import time

__all__ = ["enable_wal"]


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
