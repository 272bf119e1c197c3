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
  for substrings and scripts without word breaks (CJK).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from skills_registry.registry.errors import Conflict, NotFound, UsageError
from skills_registry.registry.pg_accounts import PostgresAccounts
from skills_registry.registry.pg_migrations import migrate
from skills_registry.registry.semver import Version
from skills_registry.registry.sqlite_schema import (
    MAX_QUERY_TERMS,
    STOPWORDS,
    cjk_bigrams,
    search_text,
)
from skills_registry.registry.storage import (
    STATUSES,
    decode_cursor,
    encode_cursor,
    normalize_time,
    now_iso,
)

FEED_LOCK = 0x6B696C66  # transaction-level advisory lock that orders the change feed


def _ts_query(query: str) -> str:
    """OR of the query's words (stop words dropped unless nothing else is left), prefix
    matching for words of 3+ characters and CJK bigrams: the SQLite store's ``fts_query``."""
    words = re.findall(r"\w+", cjk_bigrams(query.lower()))
    kept = [w for w in words if w not in STOPWORDS] or words
    seen: list[str] = []
    for word in kept:
        if word not in seen:
            seen.append(word)
    return " | ".join(_ts_terms(seen))


def _ts_terms(words: list[str]) -> list[str]:
    return [f"'{w}':*" if len(w) >= 3 and w.isascii() else f"'{w}'" for w in words][
        :MAX_QUERY_TERMS
    ]


RANKED_TERMS = 8  # the score counts the first 8 query words; later ones still match


def _weighted(tsq: str, weight: str) -> list[str]:
    """Each term of an OR-query restricted to one weight (A: name, B: description)."""
    return [t + weight if t.endswith(":*") else f"{t}:{weight}" for t in tsq.split(" | ")][
        :RANKED_TERMS
    ]


def _skill_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "namespace": row["namespace"],
        "name": row["name"],
        "description": row["description"],
        "latestVersion": row["latest"],
        "deprecated": row["deprecated"],
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


_SKILL_COLS = (
    "s.id, s.namespace, s.name, s.description, s.latest, s.deprecated, s.created_at, s.updated_at"
)


def _configure(conn: psycopg.Connection[Any]) -> None:
    """Custom plans only. psycopg prepares a statement after its fifth run, and PostgreSQL then
    switches to a generic plan, where ``to_tsquery('english', $1)`` is no longer folded to a
    constant but parsed again for every candidate row (five times per row in a two-word search:
    2-3x slower). The statements stay prepared (parsed once); only the plan is per call."""
    conn.execute("SET plan_cache_mode = force_custom_plan")


class PostgresStore(PostgresAccounts):
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
        self._cache_marker: int | None = -1
        self._cache: dict[tuple[Any, ...], tuple[list[dict[str, Any]], str | None]] = {}

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
            raise Conflict(
                f"this registry database is signed with {bound}, but this instance's key is {key_id}",
                hint="give every instance the same --signing-key file (or KILN_REGISTRY_SIGNING_KEY)",
            )

    def add_version(self, doc: dict[str, Any]) -> None:
        skill_id, version, at = doc["id"], doc["version"], doc["publishedAt"]
        namespace, name = skill_id.split("/", 1)
        with self._tx() as conn:
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
            inserted = conn.execute(
                "INSERT INTO versions VALUES (%s, %s, 'active', '', %s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                (skill_id, version, at, json.dumps(doc, sort_keys=True), doc["archiveSha256"]),
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
                f"SELECT {_SKILL_COLS} FROM skills s WHERE id=%s", (skill_id,)
            ).fetchone()
            if row is None:
                return None
            tags = cur.execute(
                "SELECT tag, version FROM dist_tags WHERE skill_id=%s ORDER BY tag", (skill_id,)
            ).fetchall()
            seq = cur.execute(
                "SELECT max(seq) AS seq FROM changes WHERE skill_id=%s", (skill_id,)
            ).fetchone()
        skill = _skill_row(row)
        skill["distTags"] = {r["tag"]: r["version"] for r in tags}
        skill["status"] = (
            "deprecated" if row["deprecated"] else ("active" if row["latest"] else "yanked")
        )
        skill["changeSeq"] = int((seq or {}).get("seq") or 0)
        return skill

    def search(
        self,
        query: str = "",
        *,
        namespace: str | None = None,
        updated_since: str | None = None,
        cursor: str | None = None,
        limit: int = 20,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Search or list, through a small cache valid while no write has committed anywhere.

        Every write appends to the change feed, whose newest ``seq`` (gap-safe, see above) is
        one index lookup: while it is unchanged, an earlier answer is still the answer.
        """
        marker = self._read("SELECT max(seq) AS seq FROM changes")[0]["seq"]
        key = (query, namespace, updated_since, cursor, limit)
        with self._cache_lock:
            if self._cache_marker != marker:
                self._cache_marker, self._cache = marker, {}
            hit = self._cache.get(key)
        if hit is None:
            hit = self._search(query, namespace, updated_since, cursor, limit)
            with self._cache_lock:
                if self._cache_marker == marker:
                    if len(self._cache) >= 1024:
                        self._cache.clear()
                    self._cache[key] = hit
        items, next_cursor = hit
        return [dict(item) for item in items], next_cursor

    def _search(
        self,
        query: str,
        namespace: str | None,
        updated_since: str | None,
        cursor: str | None,
        limit: int,
    ) -> tuple[list[dict[str, Any]], str | None]:
        limit = max(1, min(int(limit), 100))
        where: list[str] = []
        args: dict[str, Any] = {"lim": limit + 1}
        if namespace:
            where.append("s.namespace = %(ns)s")
            args["ns"] = namespace
        if updated_since:
            where.append("s.updated_at >= %(since)s")
            args["since"] = normalize_time(updated_since)
        state = decode_cursor(cursor) if cursor else {}
        tsq, text = _ts_query(query), query.strip().lower()
        if text:
            args.update(
                tsq=tsq, like="%" + _escape_like(text) + "%", off=int(state.get("offset", 0))
            )
            filters = "".join(f" AND {w}" for w in where).replace("s.", "")
            rows = self._text_search(args, tsq, text, filters, limit + 1)
            next_state: dict[str, Any] = {"offset": args["off"] + limit}
        else:
            if "after" in state:
                where.append("s.id > %(after)s")
                args["after"] = str(state["after"])
            sql = (
                f"SELECT {_SKILL_COLS} FROM skills s"
                + (" WHERE " + " AND ".join(where) if where else "")
                + " ORDER BY s.id LIMIT %(lim)s"
            )
            rows = self._read(sql, args)
            next_state = {"after": rows[limit - 1]["id"]} if len(rows) > limit else {}
        items = [_skill_row(r) for r in rows[:limit]]
        return items, (encode_cursor(next_state) if len(rows) > limit else None)

    def _text_search(
        self, args: dict[str, Any], tsq: str, text: str, filters: str, want: int
    ) -> list[dict[str, Any]]:
        """Word matches ranked (the GIN index), then substring-only matches (the trigram index).

        Substring matches the word search missed rank after all of its matches, so the second
        query runs only when the requested page reaches past them. Each query ranks the matches
        alone and joins back only the page (an OR of both paths in one WHERE lets the planner
        choose a scan that evaluates the tsquery on every row).
        """
        bonus = "(CASE WHEN name LIKE %(like)s THEN 1 ELSE 0 END)"
        words = "search @@ to_tsquery('english', %(tsq)s)"
        page = (
            f"SELECT {_SKILL_COLS}, m.r FROM (SELECT pk, {{score}} AS r FROM skills WHERE {{match}}"
            f"{filters} ORDER BY r DESC, pk LIMIT %(lim)s OFFSET %(off)s) m"
            " JOIN skills s ON s.pk = m.pk ORDER BY m.r DESC, s.pk"
        )
        rows: list[dict[str, Any]] = []
        off = int(args["off"])
        if tsq:
            # Each query word found in the name scores 4, in the description 1 (as the SQLite
            # store's bm25 weights). Weight-restricted matches are cheap per row; ts_rank is
            # several times slower and this runs on every match, not only the page.
            terms: dict[str, str] = {}
            parts = []
            for i, (name_t, desc_t) in enumerate(
                zip(_weighted(tsq, "A"), _weighted(tsq, "B"), strict=True)
            ):
                terms[f"n{i}"], terms[f"d{i}"] = name_t, desc_t
                parts.append(
                    f"(CASE WHEN search @@ to_tsquery('english', %(n{i})s) THEN 4 ELSE 0 END"
                    f" + CASE WHEN search @@ to_tsquery('english', %(d{i})s) THEN 1 ELSE 0 END)"
                )
            score, params = " + ".join(parts), {**args, **terms, "lim": want}
            if len(parts) < 4:
                # A name match scores >= 4 and a row without one <= len(parts) < 4: name matches
                # come first, so a page they fill is read from the name-only index alone.
                named = "search_names @@ to_tsquery('english', %(tsq)s)"
                rows = self._read(page.format(score=score, match=named), params)
            if len(rows) < want:
                rows = self._read(page.format(score=score, match=words), params)
        if len(rows) >= want or (tsq and (len(text) < 3 or " " in text)):
            return rows
        before = off + len(rows)
        if tsq and not rows and off:
            before = self._read(f"SELECT count(*) AS n FROM skills WHERE {words}{filters}", args)[
                0
            ]["n"]
        match = "search_text LIKE %(like)s" + (f" AND NOT {words}" if tsq else "")
        extra = {**args, "lim": want - len(rows), "off": max(0, off - before)}
        return rows + self._read(page.format(score=bonus, match=match), extra)

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
            cur = conn.execute(
                "UPDATE versions SET status=%s, status_reason=%s WHERE skill_id=%s AND version=%s",
                (status, reason[:500], skill_id, version),
            )
            if cur.rowcount == 0:
                raise NotFound(f"no version {skill_id}@{version}")
            live = [
                r["version"]  # type: ignore[call-overload]
                for r in conn.execute(
                    "SELECT version FROM versions WHERE skill_id=%s AND status != 'yanked'",
                    (skill_id,),
                )
            ]
            releases = [Version.parse(v) for v in live if not Version.parse(v).prerelease]
            latest = str(max(releases, key=Version.key)) if releases else None
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
        if not re.fullmatch(r"[a-z][a-z0-9-]{0,31}", tag):
            raise UsageError(
                f"invalid dist-tag {tag!r}", hint="use lowercase letters, digits and '-'"
            )
        with self._tx() as conn:
            if version is None:
                conn.execute("DELETE FROM dist_tags WHERE skill_id=%s AND tag=%s", (skill_id, tag))
            else:
                if not conn.execute(
                    "SELECT 1 FROM versions WHERE skill_id=%s AND version=%s", (skill_id, version)
                ).fetchone():
                    raise NotFound(f"no version {skill_id}@{version}")
                self._tag(conn, skill_id, tag, version)
            conn.execute("UPDATE skills SET updated_at=%s WHERE id=%s", (now_iso(), skill_id))
            self._log(conn, skill_id, version, f"dist-tag:{tag}")

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

    def archive_referenced(self, sha256: str) -> bool:
        return bool(self._read("SELECT 1 FROM versions WHERE archive_sha256=%s LIMIT 1", (sha256,)))


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
