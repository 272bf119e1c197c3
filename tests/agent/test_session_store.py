"""The session store's schema: named migrations recorded by sqlite-migrate, tables made with
sqlite-utils, and stores written by the earlier hand-written migrator adopted as they are."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agent.session_schema import MIGRATION_SET, STEPS
from agent.session_store import SessionStore
from agent.types import user_message

# What the hand-written migrator created (steps and their record), kept here as a fixture.
LEGACY = {
    "m001_initial": """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY, root TEXT NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,
            title TEXT NOT NULL DEFAULT '', provider TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '',
            mode TEXT NOT NULL DEFAULT 'ask', status TEXT NOT NULL DEFAULT 'idle', epoch INTEGER NOT NULL DEFAULT 0,
            state TEXT NOT NULL DEFAULT '{}');
        CREATE TABLE messages (session_id TEXT NOT NULL, epoch INTEGER NOT NULL, seq INTEGER NOT NULL,
            json TEXT NOT NULL, PRIMARY KEY (session_id, epoch, seq));
        CREATE TABLE requests (session_id TEXT NOT NULL, step INTEGER NOT NULL, turn INTEGER NOT NULL,
            epoch INTEGER NOT NULL, message_count INTEGER NOT NULL, prefix_sha TEXT NOT NULL,
            deferred TEXT NOT NULL, max_tokens INTEGER NOT NULL, created REAL NOT NULL,
            PRIMARY KEY (session_id, step));
        CREATE TABLE prefixes (sha TEXT PRIMARY KEY, json TEXT NOT NULL);
        CREATE TABLE usage (session_id TEXT NOT NULL, step INTEGER NOT NULL, turn INTEGER NOT NULL,
            model TEXT NOT NULL, input_tokens INTEGER NOT NULL, cache_read_tokens INTEGER NOT NULL,
            cache_write_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL,
            created REAL NOT NULL, PRIMARY KEY (session_id, step));
        CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,
            json TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (session_id, seq));
        CREATE INDEX messages_by_session ON messages(session_id, epoch, seq);
        """,
    "m002_search": """CREATE VIRTUAL TABLE session_text USING fts5(session_id UNINDEXED,
        kind UNINDEXED, text, tokenize = 'porter unicode61');""",
    "m003_compactions": """CREATE TABLE compactions (session_id TEXT NOT NULL, epoch INTEGER
        NOT NULL, created REAL NOT NULL, tier INTEGER NOT NULL, json TEXT NOT NULL,
        PRIMARY KEY (session_id, epoch));""",
}  # fmt: skip


def legacy_store(path: Path, steps: list[str]) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied REAL NOT NULL)")
    for name in steps:
        db.executescript(LEGACY[name])
        db.execute("INSERT INTO _migrations VALUES (?, 1700000000.0)", (name,))
    db.execute(
        "INSERT INTO sessions (id, root, created, updated, title, mode) "
        "VALUES ('old-1', '/w', 1, 2, 'from before', 'auto-edit')"
    )
    db.execute("INSERT INTO messages VALUES ('old-1', 0, 0, ?)", ('{"content":[],"role":"user"}',))
    db.execute("INSERT INTO session_text VALUES ('old-1', 'user', 'flaky upload retry')")
    db.commit()
    db.close()


def recorded(store: SessionStore) -> list[tuple[str, str]]:
    return [
        (r[0], r[1])
        for r in store.query(
            "SELECT name, applied_at FROM _sqlite_migrations WHERE migration_set = ? ORDER BY id",
            (MIGRATION_SET,),
        )
    ]


def test_a_new_store_records_every_named_step(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    assert [name for name, _ in recorded(store)] == [s.__name__ for s in STEPS]
    assert store.tables["sessions"].pks == ["id"]
    assert store.tables["messages"].pks == ["session_id", "epoch", "seq"]
    sid = store.create(tmp_path, provider="scripted", model="m", mode="ask")
    store.append_message(sid, 0, 0, user_message("flaky upload"))
    store.update(sid, mode="yolo")
    assert store.get(sid)["mode"] == "yolo" and store.recent(tmp_path)[0]["mode"] == "yolo"
    assert store.search("upload", tmp_path)[0]["session_id"] == sid
    first = recorded(store)
    store.close()
    again = SessionStore(tmp_path / "sessions.db")
    assert recorded(again) == first  # nothing re-ran


def test_a_store_from_the_hand_written_migrator_is_adopted_as_is(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    legacy_store(path, ["m001_initial", "m002_search", "m003_compactions"])
    store = SessionStore(path)
    assert [name for name, _ in recorded(store)] == [s.__name__ for s in STEPS]
    assert {when for _, when in recorded(store)} == {"2023-11-14 22:13:20"}  # kept, not re-run
    assert store.query("SELECT name FROM sqlite_master WHERE name = '_migrations'") == []
    info = store.get("old-1")
    assert info["title"] == "from before" and info["mode"] == "auto-edit"
    assert store.messages("old-1") == [{"content": [], "role": "user"}]
    assert store.search("upload")[0]["session_id"] == "old-1"


def test_a_partly_migrated_legacy_store_gets_the_missing_steps(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    legacy_store(path, ["m001_initial", "m002_search"])
    store = SessionStore(path)
    names = [name for name, _ in recorded(store)]
    assert names == ["m001_initial", "m002_search", "m003_compactions"]
    assert store.tables["compactions"].exists()
    assert store.get("old-1")["mode"] == "auto-edit"
