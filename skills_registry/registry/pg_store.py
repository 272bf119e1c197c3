"""The metadata store on PostgreSQL (psycopg 3 and a connection pool), for many instances.

Same documents, columns and answers as the SQLite store; what changes is how the guarantees are
kept when several server processes write at once:

- a version is inserted with ``ON CONFLICT DO NOTHING``: of two racing publishes of one version
  exactly one inserts a row, the other gets a 409; the skill row is locked (``FOR UPDATE``) so
  ``latest`` and dist-tags are computed by one writer at a time per skill;
- the change feed's ``seq`` comes from a sequence, and sequences are not gap-safe by themselves
  (seq 7 may commit before seq 6, and a mirror that read 7 would never see 6). Each write takes a
  transaction-level advisory lock just before it appends to the feed and holds it to commit, so
  feed rows become visible in ``seq`` order;
- search uses a weighted ``tsvector`` (name A, description B) over a GIN index, and ``pg_trgm``
  for substrings and scripts without word breaks (CJK); that search is ``pg_search``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from skills_registry.registry.answer_cache import AnswerCache
from skills_registry.registry.errors import Conflict, KeyMismatch, NotFound, UsageError
from skills_registry.registry.pg_accounts import PostgresAccounts
from skills_registry.registry.pg_migrations import migrate
from skills_registry.registry.pg_search import SKILL_COLS, PostgresSearch, skill_row
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
from skills_registry.registry.sqlite_schema import search_text
from skills_registry.registry.storage import STATUSES, now_iso
from skills_registry.registry.store_rules import (
    LOOKALIKE_LOCK_CLASS,
    LOOKALIKE_SQL,
    TAG_LOCK_CLASS,
    check_dist_tag,
    check_precedence_free,
    check_tag_room,
    check_tag_target,
    latest_after_status,
    lookalike_key,
    lookalike_refusal,
)

FEED_LOCK = 0x6B696C66  # transaction-level advisory lock that orders the change feed
QUOTA_LOCK_CLASS = 0x6B717561  # with hashtext(namespace): one quota count per namespace at once


def _configure(conn: psycopg.Connection[Any]) -> None:
    """Custom plans only. psycopg prepares a statement after its fifth run, and PostgreSQL then
    switches to a generic plan, where ``to_tsquery('english', $1)`` is no longer folded to a
    constant but parsed again for every candidate row (five times per row in a two-word search:
    2-3x slower). The statements stay prepared (parsed once); only the plan is per call."""
    conn.execute("SET plan_cache_mode = force_custom_plan")


class PostgresStore(PostgresAccounts, PostgresSearch):
    """Metadata in PostgreSQL; safe for any number of server processes on one database."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 8) -> None:
        self.url = url
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)
        self.pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True, "row_factory": dict_row},
            configure=_configure,
            open=True,
            name="kiln-registry",
        )
        self.pool.wait(timeout=30)
        self._cache_lock = threading.Lock()
        self.search_cache = AnswerCache()

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[Any]]:
        with self.pool.connection() as conn, conn.transaction():
            yield conn

    def _read(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        with self.pool.connection() as conn:
            return conn.execute(sql, params).fetchall()  # type: ignore[return-value]

    def _log(
        self, conn: psycopg.Connection[Any], skill_id: str, version: str | None, kind: str
    ) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (FEED_LOCK,))
        conn.execute(
            "INSERT INTO changes (skill_id, version, kind, at) VALUES (%s, %s, %s, %s)",
            (skill_id, version, kind, now_iso()),
        )

    def ping(self) -> None:
        self._read("SELECT 1")

    def bind_signing_key(self, key_id: str) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO registry_meta VALUES ('signing_key', %s) ON CONFLICT DO NOTHING",
                (key_id,),
            )
            row = conn.execute("SELECT value FROM registry_meta WHERE key='signing_key'").fetchone()
        bound = row["value"]  # type: ignore[index]
        if bound != key_id:
            raise KeyMismatch(bound, key_id)

    def add_version(self, doc: dict[str, Any], quotas: Quotas | None = None) -> None:
        skill_id, version, at = doc["id"], doc["version"], doc["publishedAt"]
        namespace, name = skill_id.split("/", 1)
        size = int(doc.get("archiveSize") or 0)
        with self._tx() as conn:
            if quotas is not None:
                # one publish per namespace at a time, on every instance, counts and inserts:
                # two racing publishes cannot both fit in the room left for one
                conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (QUOTA_LOCK_CLASS, namespace)
                )
                usage = read_usage(conn, "%s", namespace, skill_id, window_start())
                check(quotas, usage, skill_id, size)
            if not conn.execute("SELECT 1 FROM skills WHERE id=%s", (skill_id,)).fetchone():
                # a first publish: take turns with any other whose name reads alike, then look
                # again (the early check ran before the upload)
                conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                    (LOOKALIKE_LOCK_CLASS, lookalike_key(name)),
                )
                other = self._lookalike(conn, skill_id)
                if other is not None:
                    raise lookalike_refusal(skill_id, other)
                # the feed's lock now, not at ``_log``: new skills' pks then commit in order,
                # which search pages rely on (a cursor ranks only pks up to its first page's max)
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (FEED_LOCK,))
            conn.execute(
                "INSERT INTO skills (id, namespace, name, description, created_at, updated_at)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                (skill_id, namespace, name, doc["description"], at, at),
            )
            row = conn.execute(
                "SELECT pk, latest, search_name FROM skills WHERE id=%s FOR UPDATE", (skill_id,)
            ).fetchone()
            assert row is not None
            fresh = not row["search_name"]
            # under the skill row's lock: a racing publish of 1.0.0+b beside 1.0.0+a sees it
            published = conn.execute("SELECT version FROM versions WHERE skill_id=%s", (skill_id,))
            check_precedence_free(
                skill_id, version, [r["version"] for r in published if r["version"] != version]
            )
            inserted = conn.execute(
                "INSERT INTO versions (skill_id, version, status, status_reason, published_at,"
                " doc, archive_sha256, archive_size) VALUES (%s, %s, 'active', '', %s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                (
                    skill_id,
                    version,
                    at,
                    json.dumps(doc, sort_keys=True),
                    doc["archiveSha256"],
                    size,
                ),
            ).rowcount
            if not inserted:
                raise Conflict(f"{skill_id}@{version} is already published")
            latest = row["latest"]
            new = Version.parse(version)
            if not new.prerelease and (latest is None or Version.parse(latest) < new):
                latest = version
                conn.execute(
                    "UPDATE skills SET description=%s WHERE pk=%s", (doc["description"], row["pk"])
                )
                self._index(conn, row["pk"], name, doc["description"])
                self._tag(conn, skill_id, "latest", version)
            elif fresh:
                self._index(conn, row["pk"], name, doc["description"])
            conn.execute(
                "UPDATE skills SET latest=%s, updated_at=%s WHERE pk=%s", (latest, at, row["pk"])
            )
            self._log(conn, skill_id, version, "publish")

    def _index(self, conn: psycopg.Connection[Any], pk: int, name: str, description: str) -> None:
        conn.execute(
            "UPDATE skills SET search_name=%s, search_desc=%s WHERE pk=%s",
            (*search_text(name, description), pk),
        )

    def _tag(self, conn: psycopg.Connection[Any], skill_id: str, tag: str, version: str) -> None:
        conn.execute(
            "INSERT INTO dist_tags VALUES (%s, %s, %s)"
            " ON CONFLICT (skill_id, tag) DO UPDATE SET version=EXCLUDED.version",
            (skill_id, tag, version),
        )

    def get_skill(self, skill_id: str) -> dict[str, Any] | None:
        with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            row = cur.execute(
                f"SELECT {SKILL_COLS} FROM skills s WHERE id=%s", (skill_id,)
            ).fetchone()
            if row is None:
                return None
            tags = cur.execute(
                "SELECT tag, version FROM dist_tags WHERE skill_id=%s ORDER BY tag", (skill_id,)
            ).fetchall()
            seq = cur.execute(
                "SELECT max(seq) AS seq FROM changes WHERE skill_id=%s", (skill_id,)
            ).fetchone()
        skill = skill_row(row)
        skill["distTags"] = {r["tag"]: r["version"] for r in tags}
        skill["status"] = (
            "deprecated" if row["deprecated"] else ("active" if row["latest"] else "yanked")
        )
        skill["changeSeq"] = int((seq or {}).get("seq") or 0)
        return skill

    def versions(self, skill_id: str) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT version, status, status_reason, published_at, archive_sha256"
            " FROM versions WHERE skill_id=%s",
            (skill_id,),
        )
        out = [
            {
                "version": r["version"],
                "status": r["status"],
                "statusReason": r["status_reason"],
                "publishedAt": r["published_at"],
                "archiveSha256": r["archive_sha256"],
            }
            for r in rows
        ]
        return sorted(out, key=lambda v: Version.parse(v["version"]).key(), reverse=True)

    def get_version(self, skill_id: str, version: str) -> dict[str, Any] | None:
        rows = self._read(
            "SELECT status, status_reason, doc FROM versions WHERE skill_id=%s AND version=%s",
            (skill_id, version),
        )
        if not rows:
            return None
        doc: dict[str, Any] = json.loads(rows[0]["doc"])
        doc["status"], doc["statusReason"] = rows[0]["status"], rows[0]["status_reason"]
        return doc

    def set_status(
        self, skill_id: str, version: str, status: str, reason: str = ""
    ) -> dict[str, Any]:
        if status not in STATUSES:
            raise UsageError(f"unknown status {status!r}", hint=f"use one of {', '.join(STATUSES)}")
        with self._tx() as conn:
            if not conn.execute(
                "SELECT 1 FROM skills WHERE id=%s FOR UPDATE", (skill_id,)
            ).fetchone():
                raise NotFound(f"no version {skill_id}@{version}")
            before = self._live(conn, skill_id)
            cur = conn.execute(
                "UPDATE versions SET status=%s, status_reason=%s WHERE skill_id=%s AND version=%s",
                (status, reason[:500], skill_id, version),
            )
            if cur.rowcount == 0:
                raise NotFound(f"no version {skill_id}@{version}")
            tag = conn.execute(
                "SELECT version FROM dist_tags WHERE skill_id=%s AND tag='latest'", (skill_id,)
            ).fetchone()
            latest = latest_after_status(
                tag["version"] if tag else None,  # type: ignore[call-overload]
                before,
                self._live(conn, skill_id),
            )
            conn.execute(
                "UPDATE skills SET latest=%s, updated_at=%s WHERE id=%s",
                (latest, now_iso(), skill_id),
            )
            if latest:
                self._tag(conn, skill_id, "latest", latest)
            else:
                conn.execute(
                    "DELETE FROM dist_tags WHERE skill_id=%s AND tag='latest'", (skill_id,)
                )
            self._log(conn, skill_id, version, status if status != "active" else "restore")
        doc = self.get_version(skill_id, version)
        assert doc is not None
        return doc

    @staticmethod
    def _live(conn: psycopg.Connection[Any], skill_id: str) -> list[str]:
        rows = conn.execute(
            "SELECT version FROM versions WHERE skill_id=%s AND status != 'yanked'", (skill_id,)
        )
        return [r["version"] for r in rows]  # type: ignore[call-overload]

    def set_deprecation(self, skill_id: str, message: str | None) -> None:
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE skills SET deprecated=%s, updated_at=%s WHERE id=%s",
                (message[:500] if message else None, now_iso(), skill_id),
            )
            if cur.rowcount == 0:
                raise NotFound(f"no skill {skill_id}")
            self._log(conn, skill_id, None, "deprecate" if message else "undeprecate")

    def set_dist_tag(self, skill_id: str, tag: str, version: str | None) -> None:
        if version is not None:  # a tag stored before the rule held can still be removed
            check_dist_tag(tag)
        with self._tx() as conn:
            if version is None:
                conn.execute("DELETE FROM dist_tags WHERE skill_id=%s AND tag=%s", (skill_id, tag))
            else:
                row = conn.execute(  # FOR SHARE: a yank in flight waits, or this sees it
                    "SELECT status FROM versions WHERE skill_id=%s AND version=%s FOR SHARE",
                    (skill_id, version),
                ).fetchone()
                check_tag_target(skill_id, tag, version, row["status"] if row else None)
                # one dist-tag write of a skill at a time, so two new tags cannot both fit
                conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (TAG_LOCK_CLASS, skill_id)
                )
                tags = conn.execute("SELECT tag FROM dist_tags WHERE skill_id=%s", (skill_id,))
                check_tag_room(skill_id, tag, [t["tag"] for t in tags])
                self._tag(conn, skill_id, tag, version)
                if tag == "latest":  # what search shows as latestVersion
                    conn.execute("UPDATE skills SET latest=%s WHERE id=%s", (version, skill_id))
            conn.execute("UPDATE skills SET updated_at=%s WHERE id=%s", (now_iso(), skill_id))
            self._log(conn, skill_id, version, f"dist-tag:{tag}")

    def last_seq(self) -> int:
        return int(self._read("SELECT coalesce(max(seq), 0) AS n FROM changes")[0]["n"])

    def advance_seq(self, floor: int) -> None:
        with self._tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (FEED_LOCK,))
            conn.execute(
                "SELECT setval(pg_get_serial_sequence('changes', 'seq'),"
                " GREATEST(%s, nextval(pg_get_serial_sequence('changes', 'seq'))))",
                (floor,),
            )

    def changes(self, since: int, limit: int) -> list[dict[str, Any]]:
        rows = self._read(
            "SELECT seq, skill_id, version, kind, at FROM changes WHERE seq > %s"
            " ORDER BY seq LIMIT %s",
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
        return int(self._read("SELECT count(*) AS n FROM skills")[0]["n"])

    def lookalike(self, skill_id: str) -> str | None:
        with self.pool.connection() as conn:
            return self._lookalike(conn, skill_id)

    def quota_usage(self, skill_id: str) -> Usage:
        with self.pool.connection() as conn:
            return read_usage(conn, "%s", skill_id.partition("/")[0], skill_id, window_start())

    def namespace_usage(self, namespace: str) -> NamespaceUsage:
        with self.pool.connection() as conn:
            return read_namespace_usage(conn, "%s", namespace, window_start())

    @staticmethod
    def _lookalike(conn: psycopg.Connection[Any], skill_id: str) -> str | None:
        name = skill_id.partition("/")[2]
        row = conn.execute(
            LOOKALIKE_SQL.format(p="%s"),
            (lookalike_key(name), name, lookalike_key(skill_id), skill_id),
        ).fetchone()
        return str(row["id"]) if row else None  # type: ignore[index]

    def archive_referenced(self, sha256: str) -> bool:
        return bool(self._read("SELECT 1 FROM versions WHERE archive_sha256=%s LIMIT 1", (sha256,)))
