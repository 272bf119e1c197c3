"""The embedded metadata store: one SQLite file in WAL mode, a connection per thread.

The schema is named migrations (``sqlite_schema``) applied by the constructor; every write is
one ``BEGIN IMMEDIATE`` transaction that also appends to the change feed. Version documents are
stored whole as JSON; the columns beside them exist only to search, sort and resolve. Tokens,
the audit log and trusted publishers are ``sqlite_accounts``; search and listing
``sqlite_search``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from kiln_errors.sqlite_common import enable_wal
from skills_registry.registry.errors import Conflict, KeyMismatch, NotFound, UsageError
from skills_registry.registry.quotas import (
    NamespaceUsage,
    Quotas,
    Usage,
    check,
    read_namespace_usage,
    read_usage,
    window_start,
)
from skills_registry.registry.semver import Version
from skills_registry.registry.sqlite_accounts import SQLiteAccounts
from skills_registry.registry.sqlite_schema import migrate, search_text
from skills_registry.registry.sqlite_search import SQLiteSearch, skill_row
from skills_registry.registry.storage import STATUSES, now_iso
from skills_registry.registry.store_rules import (
    LOOKALIKE_SQL,
    check_dist_tag,
    check_precedence_free,
    check_tag_room,
    check_tag_target,
    latest_after_status,
    lookalike_key,
    lookalike_refusal,
)

# A skill's versions from the covering index ``versions_list`` (``sqlite_schema.m009``): the
# documents, up to 8 MB each, are never read for a list.
VERSION_LIST_SQL = (
    "SELECT version, status, status_reason, published_at, archive_sha256 AS sha256"
    " FROM versions WHERE skill_id=?"
)


class SQLiteStore(SQLiteAccounts, SQLiteSearch):
    """The embedded metadata store: one SQLite file in WAL mode, a connection per thread."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._generation = 0
        migrate(self.path)

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(
                self.path, timeout=30, check_same_thread=False, isolation_level=None
            )
            db.row_factory = sqlite3.Row
            enable_wal(db, 30)
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def _write(self) -> _Tx:
        self._generation += 1  # before and after: a reader never caches a half-seen write
        return _Tx(self._db(), self._write_lock, self)

    def connection(self) -> sqlite3.Connection:
        return self._db()

    def transaction(self) -> _Tx:
        return self._write()

    def _index(self, db: sqlite3.Connection, pk: int | None, name: str, description: str) -> None:
        db.execute("DELETE FROM skills_fts WHERE rowid=?", (pk,))
        db.execute(
            "INSERT INTO skills_fts (rowid, name, description) VALUES (?, ?, ?)",
            (pk, *search_text(name, description)),
        )

    def _log(self, db: sqlite3.Connection, skill_id: str, version: str | None, kind: str) -> None:
        db.execute(
            "INSERT INTO changes (skill_id, version, kind, at) VALUES (?, ?, ?, ?)",
            (skill_id, version, kind, now_iso()),
        )

    def add_version(self, doc: dict[str, Any], quotas: Quotas | None = None) -> None:
        skill_id, version, at = doc["id"], doc["version"], doc["publishedAt"]
        namespace, name = skill_id.split("/", 1)
        size = int(doc.get("archiveSize") or 0)
        with self._write() as db:  # BEGIN IMMEDIATE: one writer of the file, every process
            if quotas is not None:
                usage = read_usage(db, "?", namespace, skill_id, window_start())
                check(quotas, usage, skill_id, size)
            if db.execute(
                "SELECT 1 FROM versions WHERE skill_id=? AND version=?", (skill_id, version)
            ).fetchone():
                raise Conflict(f"{skill_id}@{version} is already published")
            published = db.execute("SELECT version FROM versions WHERE skill_id=?", (skill_id,))
            check_precedence_free(skill_id, version, [r[0] for r in published])
            row = db.execute("SELECT pk, latest FROM skills WHERE id=?", (skill_id,)).fetchone()
            if row is None:
                other = self._lookalike(db, skill_id)
                if other is not None:  # published since the request's early check
                    raise lookalike_refusal(skill_id, other)
                cur = db.execute(
                    "INSERT INTO skills (id, namespace, name, description, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (skill_id, namespace, name, doc["description"], at, at),
                )
                pk, latest = cur.lastrowid, None
            else:
                pk, latest = row["pk"], row["latest"]
            db.execute(
                "INSERT INTO versions (skill_id, version, status, status_reason, published_at,"
                " doc, archive_sha256, archive_size) VALUES (?, ?, 'active', '', ?, ?, ?, ?)",
                (
                    skill_id,
                    version,
                    at,
                    json.dumps(doc, sort_keys=True),
                    doc["archiveSha256"],
                    size,
                ),
            )
            new = Version.parse(version)
            if not new.prerelease and (latest is None or Version.parse(latest) < new):
                latest = version
                db.execute("UPDATE skills SET description=? WHERE pk=?", (doc["description"], pk))
                self._index(db, pk, name, doc["description"])
                db.execute(
                    "INSERT OR REPLACE INTO dist_tags VALUES (?, 'latest', ?)", (skill_id, version)
                )
            elif row is None:
                self._index(db, pk, name, doc["description"])
            db.execute("UPDATE skills SET latest=?, updated_at=? WHERE pk=?", (latest, at, pk))
            self._log(db, skill_id, version, "publish")

    def get_skill(self, skill_id: str) -> dict[str, Any] | None:
        db = self._db()
        row = db.execute("SELECT * FROM skills WHERE id=?", (skill_id,)).fetchone()
        if row is None:
            return None
        skill = skill_row(row)
        skill["distTags"] = {
            r["tag"]: r["version"]
            for r in db.execute(
                "SELECT tag, version FROM dist_tags WHERE skill_id=? ORDER BY tag", (skill_id,)
            )
        }
        skill["status"] = (
            "deprecated" if row["deprecated"] else ("active" if row["latest"] else "yanked")
        )
        seq = db.execute("SELECT max(seq) FROM changes WHERE skill_id=?", (skill_id,)).fetchone()
        skill["changeSeq"] = int(seq[0] or 0)
        return skill

    def versions(self, skill_id: str) -> list[dict[str, Any]]:
        rows = self._db().execute(VERSION_LIST_SQL, (skill_id,))
        out = [
            {
                "version": r["version"],
                "status": r["status"],
                "statusReason": r["status_reason"],
                "publishedAt": r["published_at"],
                "archiveSha256": r["sha256"],
            }
            for r in rows
        ]
        return sorted(out, key=lambda v: Version.parse(v["version"]).key(), reverse=True)

    def get_version(self, skill_id: str, version: str) -> dict[str, Any] | None:
        row = (
            self._db()
            .execute(
                "SELECT status, status_reason, doc FROM versions WHERE skill_id=? AND version=?",
                (skill_id, version),
            )
            .fetchone()
        )
        if row is None:
            return None
        doc: dict[str, Any] = json.loads(row["doc"])
        doc["status"], doc["statusReason"] = row["status"], row["status_reason"]
        return doc

    def set_status(
        self, skill_id: str, version: str, status: str, reason: str = ""
    ) -> dict[str, Any]:
        if status not in STATUSES:
            raise UsageError(f"unknown status {status!r}", hint=f"use one of {', '.join(STATUSES)}")
        with self._write() as db:
            before = self._live(db, skill_id)
            cur = db.execute(
                "UPDATE versions SET status=?, status_reason=? WHERE skill_id=? AND version=?",
                (status, reason[:500], skill_id, version),
            )
            if cur.rowcount == 0:
                raise NotFound(f"no version {skill_id}@{version}")
            tag = db.execute(
                "SELECT version FROM dist_tags WHERE skill_id=? AND tag='latest'", (skill_id,)
            ).fetchone()
            latest = latest_after_status(tag and tag[0], before, self._live(db, skill_id))
            db.execute(
                "UPDATE skills SET latest=?, updated_at=? WHERE id=?", (latest, now_iso(), skill_id)
            )
            if latest:
                db.execute(
                    "INSERT OR REPLACE INTO dist_tags VALUES (?, 'latest', ?)", (skill_id, latest)
                )
            else:
                db.execute("DELETE FROM dist_tags WHERE skill_id=? AND tag='latest'", (skill_id,))
            self._log(db, skill_id, version, status if status != "active" else "restore")
        doc = self.get_version(skill_id, version)
        assert doc is not None
        return doc

    @staticmethod
    def _live(db: sqlite3.Connection, skill_id: str) -> list[str]:
        rows = db.execute(
            "SELECT version FROM versions WHERE skill_id=? AND status != 'yanked'", (skill_id,)
        )
        return [r[0] for r in rows]

    def set_deprecation(self, skill_id: str, message: str | None) -> None:
        with self._write() as db:
            cur = db.execute(
                "UPDATE skills SET deprecated=?, updated_at=? WHERE id=?",
                (message[:500] if message else None, now_iso(), skill_id),
            )
            if cur.rowcount == 0:
                raise NotFound(f"no skill {skill_id}")
            self._log(db, skill_id, None, "deprecate" if message else "undeprecate")

    def set_dist_tag(self, skill_id: str, tag: str, version: str | None) -> None:
        if version is not None:  # a tag stored before the rule held can still be removed
            check_dist_tag(tag)
        with self._write() as db:
            if version is None:
                db.execute("DELETE FROM dist_tags WHERE skill_id=? AND tag=?", (skill_id, tag))
            else:
                row = db.execute(
                    "SELECT status FROM versions WHERE skill_id=? AND version=?",
                    (skill_id, version),
                ).fetchone()
                check_tag_target(skill_id, tag, version, row and row[0])
                tags = db.execute("SELECT tag FROM dist_tags WHERE skill_id=?", (skill_id,))
                check_tag_room(skill_id, tag, [t[0] for t in tags])
                db.execute(
                    "INSERT OR REPLACE INTO dist_tags VALUES (?, ?, ?)", (skill_id, tag, version)
                )
                if tag == "latest":  # what search shows as latestVersion
                    db.execute("UPDATE skills SET latest=? WHERE id=?", (version, skill_id))
            db.execute("UPDATE skills SET updated_at=? WHERE id=?", (now_iso(), skill_id))
            self._log(db, skill_id, version, f"dist-tag:{tag}")

    def last_seq(self) -> int:
        row = self._db().execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()
        return int(row[0])

    def advance_seq(self, floor: int) -> None:
        with self._write() as db:  # AUTOINCREMENT takes the next seq above sqlite_sequence's
            db.execute(
                "INSERT INTO sqlite_sequence (name, seq) SELECT 'changes', 0 WHERE NOT EXISTS "
                "(SELECT 1 FROM sqlite_sequence WHERE name = 'changes')"
            )
            db.execute(
                "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'changes'", (floor,)
            )

    def changes(self, since: int, limit: int) -> list[dict[str, Any]]:
        rows = self._db().execute(
            "SELECT * FROM changes WHERE seq > ? ORDER BY seq LIMIT ?",
            (since, max(1, min(limit, 1000))),
        )
        return [
            {
                "seq": r["seq"],
                "id": r["skill_id"],
                "version": r["version"],
                "kind": r["kind"],
                "at": r["at"],
            }
            for r in rows
        ]

    def count(self) -> int:
        return int(self._db().execute("SELECT count(*) FROM skills").fetchone()[0])

    def lookalike(self, skill_id: str) -> str | None:
        return self._lookalike(self._db(), skill_id)

    def quota_usage(self, skill_id: str) -> Usage:
        return read_usage(self._db(), "?", skill_id.partition("/")[0], skill_id, window_start())

    def namespace_usage(self, namespace: str) -> NamespaceUsage:
        return read_namespace_usage(self._db(), "?", namespace, window_start())

    @staticmethod
    def _lookalike(db: sqlite3.Connection, skill_id: str) -> str | None:
        name = skill_id.partition("/")[2]
        row = db.execute(
            LOOKALIKE_SQL.format(p="?"),
            (lookalike_key(name), name, lookalike_key(skill_id), skill_id),
        ).fetchone()
        return str(row[0]) if row else None

    def ping(self) -> None:
        self._db().execute("SELECT 1").fetchone()

    def bind_signing_key(self, key_id: str) -> None:
        with self._write() as db:
            db.execute("INSERT OR IGNORE INTO registry_meta VALUES ('signing_key', ?)", (key_id,))
            bound = db.execute("SELECT value FROM registry_meta WHERE key='signing_key'").fetchone()
        if bound[0] != key_id:
            raise KeyMismatch(bound[0], key_id)

    def archive_referenced(self, sha256: str) -> bool:
        row = (
            self._db()
            .execute(
                "SELECT 1 FROM versions WHERE archive_sha256 = ? LIMIT 1",
                (sha256,),
            )
            .fetchone()
        )
        return row is not None


class _Tx:
    """``BEGIN IMMEDIATE`` under a process-local lock: one writer, readers never blocked (WAL)."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock, store: SQLiteStore) -> None:
        self.db, self.lock, self.store = db, lock, store

    def __enter__(self) -> sqlite3.Connection:
        self.lock.acquire()
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        try:
            self.db.execute("COMMIT" if kind is None else "ROLLBACK")
        finally:
            self.store._generation += 1
            self.lock.release()
