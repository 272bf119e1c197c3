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

Between idle steps, FTS5 itself merges a level as soon as it holds ``crisismerge`` segments,
inside the write that added the last one. A full run writes a segment per batch and merges
everything at its end, so it keeps that number high (``BULK_CRISIS``, set by migration m003);
an edit writes one small segment, and typing without a pause left ~40 of them behind for
every query term to probe (~2 ms of a search after 60 edits on SQLAlchemy), so while files
are edited it is ``EDIT_CRISIS``: merging eight small segments costs the edit that does it
little (see ``set_crisis``).
"""

from __future__ import annotations

import sqlite3

TABLES = ("blocks_fts", "commits_fts", "files_fts")
STEP_PAGES = 2000  # pages merged per step: ~0.1 s CPU, ~8 MB of WAL
SMALL_LEVEL = 2  # ``usermerge``: a level with this many segments is merged by merge_small
BULK_CRISIS = 64  # ``crisismerge`` of ``blocks_fts`` during full runs (m003's value)
EDIT_CRISIS = 8  # ... and while an editor session edits


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


def set_crisis(conn: sqlite3.Connection, segments: int) -> None:
    """Make ``blocks_fts`` merge a level once it holds ``segments`` segments (the setting is
    stored with the table, so it is read first and written only when it differs; call inside
    a write transaction). Merging changes no score: see the module's first paragraph."""
    row = conn.execute("SELECT v FROM blocks_fts_config WHERE k = 'crisismerge'").fetchone()
    if row is None or row[0] != segments:
        conn.execute(
            "INSERT INTO blocks_fts(blocks_fts, rank) VALUES ('crisismerge', ?)", (segments,)
        )


def segments(conn: sqlite3.Connection, table: str) -> int:
    """How many segments ``table`` holds (each query term is looked up in every one)."""
    row = conn.execute(f"SELECT count(DISTINCT segid) FROM {table}_idx").fetchone()  # noqa: S608
    return int(row[0])


def _merge(conn: sqlite3.Connection, table: str, pages: int) -> bool:
    before = conn.total_changes
    conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', ?)", (pages,))
    return conn.total_changes - before >= 2  # FTS5's documented sign that work was done
