"""Merging the full-text indexes' segments, so a search probes few b-trees instead of dozens.

FTS5 writes every transaction as a new segment and merges them lazily (``automerge``); after a
full index ``blocks_fts`` holds ~30 segments and each edit adds one. A query term is looked up
in every segment, so a search after a build paid ~2 ms CPU on SQLAlchemy for segment probes
alone. Merging changes no score: BM25 reads the same counts from one segment as from many.

Two kinds of step, each bounded in pages (one transaction per step, so an edit waits for one
step at most and the WAL grows by a bounded amount between checkpoints):
  * ``merge_all``: any segments may merge, down to one (after a full build or a history read);
  * ``merge_small``: only levels holding several segments (the small ones edits leave), never
    rewriting the one large segment (the idle path of an editor session).
"""

from __future__ import annotations

import sqlite3

TABLES = ("blocks_fts", "commits_fts", "files_fts")
STEP_PAGES = 2000  # pages merged per step: ~0.1 s CPU, ~8 MB of WAL
SMALL_LEVEL = 2  # ``usermerge``: a level with this many segments is merged by merge_small


def merge_all(conn: sqlite3.Connection, table: str, pages: int = STEP_PAGES) -> bool:
    """One step of merging ``table`` towards a single segment; False when there was nothing
    left to merge. Runs inside the caller's transaction."""
    return _merge(conn, table, -pages)


def merge_small(conn: sqlite3.Connection, table: str, pages: int = STEP_PAGES) -> bool:
    """One step merging the segments of any level that holds ``SMALL_LEVEL`` or more (the
    small ones left by edits); False when no level does."""
    row = conn.execute(
        f"SELECT v FROM {table}_config WHERE k = 'usermerge'"  # noqa: S608 - a fixed name
    ).fetchone()
    if row is None or row[0] != SMALL_LEVEL:  # a setting of the table: written once
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('usermerge', {SMALL_LEVEL})")
    return _merge(conn, table, pages)


def segments(conn: sqlite3.Connection, table: str) -> int:
    """How many segments ``table`` holds (each query term is looked up in every one)."""
    row = conn.execute(f"SELECT count(DISTINCT segid) FROM {table}_idx").fetchone()  # noqa: S608
    return int(row[0])


def _merge(conn: sqlite3.Connection, table: str, pages: int) -> bool:
    before = conn.total_changes
    conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', ?)", (pages,))
    return conn.total_changes - before >= 2  # FTS5's documented sign that work was done
