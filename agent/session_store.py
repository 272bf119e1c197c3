"""The session store: every session, message, request and usage row in SQLite under KILN_HOME.

Messages are stored as canonical JSON, written as they are appended, so a crash loses at most
the step in flight and a resumed session replays byte-identical requests. A compaction starts a
new *epoch* of messages; older epochs stay for the inspector and for search (what is searched
and how a query reads: ``agent.session_search``). The schema is a list of named migrations
(``agent.session_schema``) the constructor applies.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.errors import SessionDamaged, SessionNotFound
from agent.session_open import open_store
from agent.session_search import Roots, root_filter, search_sql, searchable_text
from agent.types import Message, Usage, canonical_json
from kiln_errors import home
from kiln_errors.sqlite_common import load_sqlite_utils

if TYPE_CHECKING:
    import sqlite_utils

log = logging.getLogger("kiln.sessions")


def kiln_home() -> Path:
    return home.kiln_home()


class SessionStore:
    """One SQLite file shared by all sessions of a KILN_HOME; safe across threads and processes."""

    def __init__(self, path: Path | None = None, *, reading: bool = False) -> None:
        """``reading``: the caller only reads (`kiln sessions`, `kiln context`), so a store on
        a read-only disk is read as it is instead of refused."""
        self.path = path or kiln_home() / "sessions.db"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._tables: sqlite_utils.Database | None = None
        self.db, self.recovered = open_store(self.path, reading=reading)

    @property
    def tables(self) -> sqlite_utils.Database:
        """The store's tables through sqlite-utils (callers hold the lock)."""
        if self._tables is None or self._tables.conn is not self.db:
            self._tables = load_sqlite_utils().Database(self.db)
        return self._tables

    def close(self) -> None:
        with self._lock:
            self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection inside one write transaction (committed, or rolled back on error)."""
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:  # SQLite already rolled back (a full disk)
                    self.db.execute("ROLLBACK")
                raise

    def query(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self.db.execute(sql, params).fetchall()

    def _write(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        with self.transaction() as db:
            db.execute(sql, params)

    def folder(self, session_id: str) -> Path:
        path = self.path.parent / "sessions" / session_id
        path.mkdir(parents=True, exist_ok=True)
        return path

    # -- sessions ---------------------------------------------------------------------------

    def create(self, root: Path, *, provider: str, model: str, mode: str, title: str = "") -> str:
        session_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8]
        now = time.time()
        row = {"id": session_id, "root": str(root), "created": now, "updated": now,
               "title": title, "provider": provider, "model": model, "mode": mode}  # fmt: skip
        with self.transaction():
            self.tables.table("sessions").insert(row)
        return session_id

    def get(self, session_id: str) -> dict[str, Any]:
        with self._lock:
            rows = list(self.tables.table("sessions").rows_where("id = ?", [session_id], limit=1))
        if not rows:
            raise SessionNotFound(f"no session {session_id!r}", hint="see `kiln sessions list`")
        info = dict(rows[0])
        info["state"] = _stored_json(info["state"], dict, session_id, "its state")
        return info

    def resolve(self, given: str) -> str:
        """The full id of the one session whose id is ``given`` or starts with it (ids are
        long: ``20261202-163712-1a2b3c4d``); none or several is a one-line error."""
        if not given.strip():  # the start of every id
            raise SessionNotFound("the session id is empty", hint="see `kiln sessions list`")
        rows = self.query(
            "SELECT id FROM sessions WHERE id = ? OR substr(id, 1, ?) = ? ORDER BY id LIMIT 4",
            (given, len(given), given),
        )
        ids = [str(r[0]) for r in rows]
        if given in ids or len(ids) == 1:
            return given if given in ids else ids[0]
        named = repr(given) if len(given) <= 60 else repr(given[:40])[:-1] + "…'"
        if not ids:  # named short: a pasted transcript is no one-line error
            raise SessionNotFound(f"no session {named}", hint="see `kiln sessions list`")
        shown = ", ".join(ids[:3]) + (", …" if len(ids) > 3 else "")
        raise SessionNotFound(
            f"session id {named} is ambiguous: it starts {shown}",
            hint="give more of the id",
        )

    def update(self, session_id: str, **fields: Any) -> None:
        """Change columns of a session (``mode`` included: the store keeps the live mode)."""
        if "state" in fields:
            fields["state"] = canonical_json(fields["state"])
        fields["updated"] = time.time()
        with self.transaction():
            self.tables.table("sessions").update(session_id, fields)

    def recent(
        self, root: Roots = None, limit: int = 50, before: tuple[float, str] | None = None
    ) -> list[dict[str, Any]]:
        """The newest sessions of ``root`` (one workspace or several), or of every workspace;
        ``before``: only those after the session of that (updated, id) in this order, the next
        page of a listing."""
        columns = ["id", "root", "created", "updated", "title", "provider", "model", "mode"]
        where, roots = root_filter("root", root)
        params: list[Any] = list(roots)
        if before is not None:
            older = "(updated < ? OR (updated = ? AND id < ?))"
            where = f"{where} AND {older}" if where else older
            params += [before[0], before[0], before[1]]
        with self._lock:
            rows = self.tables.table("sessions").rows_where(
                where or None,
                params or None,
                select=", ".join([*columns, "status"]),
                order_by="updated desc, id desc",
                limit=limit,
            )
            return [dict(r) for r in rows]

    # -- messages ---------------------------------------------------------------------------

    def append_message(
        self, session_id: str, epoch: int, seq: int, message: Message, state: Any = None
    ) -> None:
        """``state``: the session's state stored in the same transaction (a note the message
        carries is then stored as delivered with it, or neither is)."""
        text = canonical_json(message)
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute(
                    "INSERT INTO messages VALUES (?,?,?,?)", (session_id, epoch, seq, text)
                )
                searchable = searchable_text(message)
                if searchable:
                    self.db.execute(
                        "INSERT INTO session_text VALUES (?,?,?)",
                        (session_id, message.get("role", ""), searchable),
                    )
                self.db.execute(
                    "UPDATE sessions SET updated = ? WHERE id = ?", (time.time(), session_id)
                )
                if state is not None:
                    self.db.execute(
                        "UPDATE sessions SET state = ? WHERE id = ?",
                        (canonical_json(state), session_id),
                    )
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:  # SQLite already rolled back (a full disk)
                    self.db.execute("ROLLBACK")
                raise

    def messages(self, session_id: str, epoch: int | None = None) -> list[Message]:
        if epoch is None:
            epoch = int(self.get(session_id)["epoch"])
        with self._lock:
            rows = self.db.execute(
                "SELECT seq, json FROM messages WHERE session_id = ? AND epoch = ? ORDER BY seq",
                (session_id, epoch),
            ).fetchall()
        messages = [_stored_json(text, dict, session_id, f"message {seq}") for seq, text in rows]
        for (seq, _), message in zip(rows, messages, strict=True):
            content = message.get("content")
            if not isinstance(message.get("role"), str) or not (
                isinstance(content, list) and all(isinstance(b, dict) for b in content)
            ):
                raise SessionDamaged(f"session {session_id} is damaged: message {seq} has no role "
                                     "and content blocks")  # fmt: skip
        return messages

    def position(self, session_id: str) -> tuple[int, int]:
        """The session's current epoch and how many messages it holds."""
        with self._lock:
            row = self.db.execute(
                "SELECT epoch, (SELECT count(*) FROM messages m WHERE m.session_id = s.id "
                "AND m.epoch = s.epoch) FROM sessions s WHERE s.id = ?",
                (session_id,),
            ).fetchone()
        if row is None:
            raise SessionNotFound(f"no session {session_id!r}", hint="see `kiln sessions list`")
        return int(row[0]), int(row[1])

    # -- thinking and stop notes (shown, never sent back): kept beside the messages for a replay

    def record_thought(self, session_id: str, epoch: int, seq: int, text: str) -> None:
        """The thinking that came before message ``seq`` of ``epoch`` (the ``events`` table)."""
        self._record_event(session_id, "thought", epoch, seq, text)

    def thoughts(self, session_id: str, epoch: int) -> dict[int, str]:
        """Message seq -> the thinking before it, in ``epoch``."""
        return self._events(session_id, "thought", epoch)

    def record_stop(self, session_id: str, epoch: int, seq: int, text: str) -> None:
        """The note a limit ended a turn with (``step limit reached (30)``); the turn's messages
        end before message ``seq`` of ``epoch``."""
        self._record_event(session_id, "stop", epoch, seq, text)

    def stops(self, session_id: str, epoch: int) -> dict[int, str]:
        """Message seq -> the stop note of the turn that ended before it, in ``epoch``."""
        return self._events(session_id, "stop", epoch)

    def _record_event(self, session_id: str, kind: str, epoch: int, seq: int, text: str) -> None:
        body = canonical_json({"epoch": epoch, "message": seq, "text": text})
        self._write(
            "INSERT INTO events SELECT ?, coalesce(max(seq) + 1, 0), ?, ?, ? "
            "FROM events WHERE session_id = ?",
            (session_id, kind, body, time.time(), session_id),
        )

    def _events(self, session_id: str, kind: str, epoch: int) -> dict[int, str]:
        rows = self.query(
            "SELECT json FROM events WHERE session_id = ? AND kind = ? ORDER BY seq",
            (session_id, kind),
        )
        found: dict[int, str] = {}
        for (text,) in rows:
            row = _stored_json(text, dict, session_id, f"a {kind}")
            if row.get("epoch") == epoch and isinstance(row.get("text"), str):
                found[int(row.get("message", -1))] = row["text"]
        return found

    def add_search_text(self, session_id: str, kind: str, text: str) -> None:
        self._write("INSERT INTO session_text VALUES (?,?,?)", (session_id, kind, text))

    # -- requests and usage -----------------------------------------------------------------

    def record_request(
        self,
        session_id: str,
        step: int,
        turn: int,
        epoch: int,
        message_count: int,
        prefix: dict[str, Any],
        deferred: list[str],
        max_tokens: int,
    ) -> None:
        import hashlib

        text = canonical_json(prefix)
        sha = hashlib.sha256(text.encode()).hexdigest()
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute("INSERT OR IGNORE INTO prefixes VALUES (?, ?)", (sha, text))
                self.db.execute(
                    "INSERT OR REPLACE INTO requests VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        session_id,
                        step,
                        turn,
                        epoch,
                        message_count,
                        sha,
                        canonical_json(deferred),
                        max_tokens,
                        time.time(),
                    ),
                )
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:  # SQLite already rolled back (a full disk)
                    self.db.execute("ROLLBACK")
                raise

    def requests(self, session_id: str) -> list[dict[str, Any]]:
        with self._lock:
            cur = self.db.execute(
                "SELECT r.*, p.json AS prefix FROM requests r JOIN prefixes p ON p.sha = r.prefix_sha "
                "WHERE r.session_id = ? ORDER BY r.step",
                (session_id,),
            )
            cols = [c[0] for c in cur.description]
            rows = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
        for row in rows:
            step = f"request {row['step']}"
            row["prefix"] = _stored_json(row["prefix"], dict, session_id, f"{step}'s prefix")
            row["deferred"] = _stored_json(row["deferred"], list, session_id, f"{step}'s tools")
        return rows

    def counters(self, session_id: str) -> tuple[int, int]:
        """The highest step and turn the session's requests and usage rows hold: a process
        killed mid-turn recorded them, though it never saved its state's counters."""
        with self._lock:
            row = self.db.execute(
                "SELECT max(step), max(turn) FROM (SELECT step, turn FROM requests "
                "WHERE session_id = ? UNION ALL SELECT step, turn FROM usage WHERE session_id = ?)",
                (session_id, session_id),
            ).fetchone()
        return int(row[0] or 0), int(row[1] or 0)

    def record_usage(
        self, session_id: str, step: int, turn: int, model: str, usage: Usage, cost: float
    ) -> None:
        self._write(
            "INSERT OR REPLACE INTO usage VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                session_id,
                step,
                turn,
                model,
                usage.input_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
                usage.output_tokens,
                cost,
                time.time(),
            ),
        )

    def usage(self, session_id: str) -> list[dict[str, Any]]:
        with self._lock:
            cur = self.db.execute(
                "SELECT * FROM usage WHERE session_id = ? ORDER BY step", (session_id,)
            )
            cols = [c[0] for c in cur.description]
            return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]

    def search(self, query: str, root: Roots = None, limit: int = 10) -> list[dict[str, Any]]:
        """Full-text search over transcripts and summaries; returns short excerpts. Each word
        of ``query`` is matched as written (as an FTS5 string: its quotes doubled, so ``"``,
        ``*``, ``:``, ``NEAR`` or ``-`` are text, never syntax), any word may match."""
        sql, params = search_sql(query, root, limit)
        if not sql:  # no words to look for
            return []
        with self._lock:
            cur = self.db.execute(sql, params)
            cols = [c[0] for c in cur.description]
            return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def _stored_json(text: Any, kind: type, session_id: str, what: str) -> Any:
    """A stored JSON column, or ``SessionDamaged`` naming the session and the row."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        value = None
    if not isinstance(value, kind):
        raise SessionDamaged(f"session {session_id} is damaged: {what} is unreadable")
    return value
