"""Publish quotas: what one namespace may store, and how fast it may publish.

A namespace with a token could otherwise publish without end and fill the server's disk or
database. Usage is counted from the database inside the transaction that inserts the version
(every store takes a per-namespace turn first), never kept in a process: several ``serve``
processes on one PostgreSQL database see the same numbers. The rate is counted from the
versions themselves (``published_at`` within the last hour), so a refused publish costs
nothing and a restart forgets nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from skills_registry.registry.errors import QuotaExceeded, RateLimited

GIB = 1024**3
RATE_WINDOW_SECONDS = 3600

# ``{p}`` is the driver's placeholder (``?`` for SQLite, ``%s`` for psycopg).
NAMESPACE_BYTES_SQL = (
    "SELECT coalesce(sum(v.archive_size), 0) FROM versions v JOIN skills s ON s.id = v.skill_id"
    " WHERE s.namespace = {p}"
)
SKILL_VERSIONS_SQL = "SELECT count(*) FROM versions WHERE skill_id = {p}"
SKILL_VERSION_COUNTS_SQL = (
    "SELECT s.id AS id, count(v.skill_id) AS versions FROM skills s"
    " LEFT JOIN versions v ON v.skill_id = s.id WHERE s.namespace = {p} GROUP BY s.id ORDER BY s.id"
)
# audit entries (publishes, yanks, deprecations, dist-tag changes) of the last hour
RECENT_WRITES_SQL = "SELECT count(*) FROM audit WHERE namespace = {p} AND at > {p}"
RECENT_PUBLISHES_SQL = (
    "SELECT v.published_at FROM versions v JOIN skills s ON s.id = v.skill_id"
    " WHERE s.namespace = {p} AND v.published_at > {p} ORDER BY v.published_at"
)


@dataclass(frozen=True)
class Quotas:
    """The operator's limits (``kiln registry serve --namespace-bytes …``)."""

    namespace_bytes: int = GIB
    versions_per_skill: int = 1000
    publishes_per_hour: int = 60
    # yanks, deprecations and dist-tag changes (each a change-feed and an audit row), counted
    # with the namespace's publishes from its audit log (``--writes-per-hour``)
    writes_per_hour: int = 600

    def limits(self) -> dict[str, int]:
        """As ``/.well-known/kiln-registry.json`` lists them under ``limits``."""
        return {
            "namespaceBytes": self.namespace_bytes,
            "versionsPerSkill": self.versions_per_skill,
            "publishesPerHour": self.publishes_per_hour,
            "writesPerHour": self.writes_per_hour,
        }


@dataclass(frozen=True)
class Usage:
    """A namespace's usage as one transaction (or one early read) saw it."""

    namespace_bytes: int
    skill_versions: int
    recent: list[str]  # published_at of the namespace's versions of the last hour, oldest first


@dataclass(frozen=True)
class NamespaceUsage:
    """All of a namespace's usage, for its owner to read (``GET .../usage``)."""

    namespace_bytes: int
    skill_versions: dict[str, int]  # every skill of the namespace: its number of versions
    recent: list[str]
    writes: int = 0  # audit entries of the last hour, counted against ``writes_per_hour``


def window_start(now: datetime | None = None) -> str:
    start = (now or datetime.now(UTC)) - timedelta(seconds=RATE_WINDOW_SECONDS)
    return start.isoformat(timespec="microseconds").replace("+00:00", "Z")


def read_usage(cursor: Any, p: str, namespace: str, skill_id: str, since: str) -> Usage:
    """``cursor`` is any DB-API connection or cursor whose rows index by position or name."""

    def first(row: Any) -> int:
        return int(row[0] if not isinstance(row, dict) else next(iter(row.values())))

    used = first(cursor.execute(NAMESPACE_BYTES_SQL.format(p=p), (namespace,)).fetchone())
    versions = first(cursor.execute(SKILL_VERSIONS_SQL.format(p=p), (skill_id,)).fetchone())
    rows = cursor.execute(RECENT_PUBLISHES_SQL.format(p=p), (namespace, since)).fetchall()
    recent = [str(r[0] if not isinstance(r, dict) else r["published_at"]) for r in rows]
    return Usage(used, versions, recent)


def read_namespace_usage(cursor: Any, p: str, namespace: str, since: str) -> NamespaceUsage:
    """As ``read_usage``, with every skill's version count instead of one skill's."""

    def cell(row: Any, index: int, name: str) -> Any:
        return row[name] if isinstance(row, dict) else row[index]

    used = cursor.execute(NAMESPACE_BYTES_SQL.format(p=p), (namespace,)).fetchone()
    counts = cursor.execute(SKILL_VERSION_COUNTS_SQL.format(p=p), (namespace,)).fetchall()
    rows = cursor.execute(RECENT_PUBLISHES_SQL.format(p=p), (namespace, since)).fetchall()
    writes = cursor.execute(RECENT_WRITES_SQL.format(p=p), (namespace, since)).fetchone()
    return NamespaceUsage(
        int(next(iter(used.values())) if isinstance(used, dict) else used[0]),
        {str(cell(r, 0, "id")): int(cell(r, 1, "versions")) for r in counts},
        [str(cell(r, 0, "published_at")) for r in rows],
        int(next(iter(writes.values())) if isinstance(writes, dict) else writes[0]),
    )


def usage_report(quotas: Quotas, usage: NamespaceUsage, namespace: str) -> dict[str, Any]:
    """The answer to ``GET /v1/namespaces/{ns}/usage``: each quota by its ``limits`` name, with
    what the namespace uses of it (for versions, every skill's count and the largest)."""
    counts = usage.skill_versions
    largest = max(sorted(counts), key=counts.__getitem__, default=None)  # the first id on a tie
    return {
        "namespace": namespace,
        "namespaceBytes": {"used": usage.namespace_bytes, "limit": quotas.namespace_bytes},
        "versionsPerSkill": {
            "limit": quotas.versions_per_skill,
            "largest": None if largest is None else {"id": largest, "used": counts[largest]},
            "skills": [{"id": skill, "used": n} for skill, n in sorted(counts.items())],
        },
        "publishesPerHour": {"used": len(usage.recent), "limit": quotas.publishes_per_hour},
        "writesPerHour": {"used": usage.writes, "limit": quotas.writes_per_hour},
    }


def check(
    quotas: Quotas, usage: Usage, skill_id: str, size: int, now: datetime | None = None
) -> None:
    """Refuse a publish of ``size`` archive bytes to ``skill_id`` that would pass a quota."""
    namespace = skill_id.partition("/")[0]
    if len(usage.recent) >= quotas.publishes_per_hour:
        now = now or datetime.now(UTC)
        # publishing is possible again once enough of the hour's publishes have aged out of it
        freed = usage.recent[len(usage.recent) - quotas.publishes_per_hour]
        at = datetime.fromisoformat(freed.replace("Z", "+00:00"))
        wait = (at + timedelta(seconds=RATE_WINDOW_SECONDS) - now).total_seconds()
        retry_after = max(1, math.ceil(wait))
        raise RateLimited(
            f"namespace {namespace!r} published {len(usage.recent)} versions in the last hour; "
            f"the limit (publishesPerHour) is {quotas.publishes_per_hour}",
            retry_after=retry_after,
            hint=f"retry in {retry_after} s",
        )
    if usage.skill_versions >= quotas.versions_per_skill:
        raise QuotaExceeded(
            f"{skill_id} has {usage.skill_versions} versions; the quota (versionsPerSkill) is "
            f"{quotas.versions_per_skill}",
            quota="versionsPerSkill",
            usage=usage.skill_versions,
            limit=quotas.versions_per_skill,
            status=409,
        )
    if usage.namespace_bytes + size > quotas.namespace_bytes:
        raise QuotaExceeded(
            f"namespace {namespace!r} stores {usage.namespace_bytes} archive bytes; this "
            f"{size}-byte archive would pass its quota (namespaceBytes) of "
            f"{quotas.namespace_bytes}",
            quota="namespaceBytes",
            usage=usage.namespace_bytes,
            limit=quotas.namespace_bytes,
        )


def check_write_rate(quotas: Quotas, newest_at: str | None, namespace: str) -> None:
    """Refuse a yank, deprecation or dist-tag change of ``namespace`` when its audit log's
    ``writes_per_hour``-th newest entry (``newest_at``) is less than an hour old: each costs its
    token one small request, and adds a change-feed and an audit row for good."""
    if newest_at is None or newest_at <= window_start():
        return
    at = datetime.fromisoformat(newest_at.replace("Z", "+00:00"))
    wait = (at + timedelta(seconds=RATE_WINDOW_SECONDS) - datetime.now(UTC)).total_seconds()
    retry_after = max(1, math.ceil(wait))
    raise RateLimited(
        f"namespace {namespace!r} made {quotas.writes_per_hour} writes in the last hour; the "
        f"limit (writesPerHour) is {quotas.writes_per_hour}",
        retry_after=retry_after,
        hint=f"retry in {retry_after} s",
    )
