"""Where compactions are kept: each one starts a new message epoch in the session store and
leaves a row in ``compactions`` (migration m003), which ``kiln context`` reads back.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

from agent.compaction_facts import HISTORY_TAG
from agent.session_store import SessionStore
from agent.types import Message, canonical_json


@dataclass
class CompactionRecord:
    epoch: int
    tier: int
    reason: str
    before_tokens: int
    after_tokens: int
    removed_messages: int
    kept_messages: int
    source: str  # "model", "extractive", "extractive+model" (mixed) or "none" (tier 1 only)
    archive: str
    summary_tokens: int = 0  # tokens the summarisation requests used (input + output)


def store_epoch(
    store: SessionStore,
    session_id: str,
    messages: list[Message],
    record: CompactionRecord,
    state: Any,
) -> None:
    """The new epoch's messages, the compaction record and the session's epoch, in one
    transaction: a crash leaves either the old epoch current or the new one complete."""
    history = next(
        (
            b["text"]
            for b in (messages[0]["content"] if messages else [])  # none left: a refused first turn
            if str(b.get("text", "")).startswith(HISTORY_TAG)
        ),
        "",
    )
    with store.transaction() as db:
        db.execute(
            "DELETE FROM messages WHERE session_id = ? AND epoch = ?",
            (session_id, record.epoch),
        )
        db.executemany(
            "INSERT INTO messages VALUES (?,?,?,?)",
            [(session_id, record.epoch, i, canonical_json(m)) for i, m in enumerate(messages)],
        )
        if history:  # summaries are searchable like the transcript they replace
            db.execute(
                "INSERT INTO session_text VALUES (?,?,?)", (session_id, "compaction", history)
            )
        db.execute(
            "INSERT OR REPLACE INTO compactions (session_id, epoch, created, tier, json) "
            "VALUES (?,?,?,?,?)",
            (
                session_id,
                record.epoch,
                time.time(),
                record.tier,
                canonical_json(asdict(record)),
            ),
        )
        db.execute(
            "UPDATE sessions SET epoch = ?, state = ?, updated = ? WHERE id = ?",
            (record.epoch, canonical_json(state), time.time(), session_id),
        )


def compactions(store: SessionStore, session_id: str) -> list[dict[str, Any]]:
    """Every compaction of a session, oldest first."""
    rows = store.query(
        "SELECT json, created FROM compactions WHERE session_id = ? ORDER BY epoch", (session_id,)
    )
    return [{**json.loads(r[0]), "created": r[1]} for r in rows]
