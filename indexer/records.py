"""What a full run records for each prepared file (``record``) and what it reports
(``IndexStats``, and which skips it said already: ``skips_said``): the part of ``Index.update``
that turns a worker's result into rows."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Container
from dataclasses import asdict, dataclass, field
from typing import Any

from indexer import store
from indexer.files import Candidate
from indexer.rows import Prepared


@dataclass
class IndexStats:
    files_seen: int = 0
    files_indexed: int = 0
    files_removed: int = 0
    blocks: int = 0
    bytes: int = 0
    seconds: float = 0.0
    commits: int = 0  # commits on HEAD newly recorded for the history signal
    skipped: list[str] = field(default_factory=list)  # "path: reason" for files that failed
    # those of ``skipped`` the last finished run reported too (``Index.update``)
    skipped_before: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


EMPTY = Prepared([], [], [])


def record(
    conn: sqlite3.Connection, item: tuple, cand: Candidate, stats: IndexStats, seen: set[str]
) -> None:
    """Record one prepared file: its new rows, a new mtime, a skip, or its removal."""
    rel, status, prepared, size, h = item
    if status == "indexed":
        store.write_file(conn, rel, prepared.language, cand.mtime_ns, size, h, prepared)
        stats.files_indexed += 1
        stats.blocks += len(prepared)
        stats.bytes += size
    elif status == "same":
        conn.execute("UPDATE files SET mtime_ns=?, size=? WHERE path=?", (cand.mtime_ns, size, rel))
        stats.skipped += _left_out_before(conn, rel)
    elif status.startswith("skip"):  # recorded without blocks so mtime skips it next time
        store.write_file(conn, rel, "skipped", cand.mtime_ns, size, h, EMPTY)
        if status != "skip":
            stats.skipped.append(f"{rel}: {status[6:]}")
    else:  # gone since the listing, or unreadable
        if store.remove_file(conn, rel):
            stats.files_removed += 1
        seen.discard(rel)
        if status.startswith("error"):
            stats.skipped.append(f"{rel}: {status[7:]}")


def skips_said(
    conn: sqlite3.Connection, lines: list[str], read: Container[str] = frozenset()
) -> list[str]:
    """Those of ``lines`` (a finished run's skips) the last finished run reported too, but for
    those of files it ``read`` (changed since); records ``lines`` for the next run. A skip is
    then said once per change (``kiln index``), not on every run. A value another program left
    there counts as nothing said."""
    known = set(_said(conn))
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('skips_said', ?)", (json.dumps(lines),))
    return [line for line in lines if line in known and not _of_one(line, read)]


def skips_unread(conn: sqlite3.Connection, unchanged: set[str]) -> list[str]:
    """The last run's lines for files left out that this run does not read again (``unchanged``
    since): a source file left out as binary or minified is read, and said, only when it
    changes, so a later run counted and ``--verbose`` listed only the other skips."""
    left_out = {
        path
        for (path,) in conn.execute("SELECT path FROM files WHERE language = 'skipped'")
        if path in unchanged
    }
    return [line for line in _said(conn) if _of_one(line, left_out)]


def _left_out_before(conn: sqlite3.Connection, rel: str) -> list[str]:
    """The last run's line for ``rel`` if it is left out (touched, its content unchanged): it
    was then neither said, counted nor listed again, so a search missed it unexplained."""
    row = conn.execute("SELECT language FROM files WHERE path = ?", (rel,)).fetchone()
    if row is None or row[0] != "skipped":
        return []
    return [line for line in _said(conn) if _of_one(line, (rel,))]


def _of_one(line: str, paths: Container[str]) -> bool:
    """Whether a ``path: reason`` line is about one of ``paths`` (a path may hold ": " too)."""
    cut = line.find(": ")
    while cut != -1 and line[:cut] not in paths:
        cut = line.find(": ", cut + 1)
    return cut != -1


def _said(conn: sqlite3.Connection) -> list[str]:
    row = conn.execute("SELECT value FROM meta WHERE key = 'skips_said'").fetchone()
    try:
        before = json.loads(row[0]) if row is not None else []
    except (TypeError, ValueError, RecursionError):  # a shipped index's "[[[[…" too
        before = []
    return [line for line in before if isinstance(line, str)] if isinstance(before, list) else []
