"""Who may write to the embedded registry, and the record of what they wrote.

Tokens are stored as sha256 hashes with a public id, a label, scopes, an optional expiry and a
revocation time; the audit log keeps one row per successful write with the token's id and
label; trusted publishers map an OIDC identity (issuer, repository, workflow, environment) to
a namespace, and ``oidc_jti`` remembers used OIDC token ids until they expire. The methods are
mixed into ``SQLiteStore``, which provides ``connection()`` and ``transaction()``.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import urlsplit

from skills_registry.registry.errors import NotFound, UsageError
from skills_registry.registry.id_rules import NAMESPACE_RE
from skills_registry.registry.storage import (
    SCOPES,
    normalize_time,
    now_iso,
    token_id,
    token_live,
)

MAX_LABEL = 100
# GitHub's OWNER/NAME: ASCII letters, digits, `-`, `_`, `.` (`\w` also took `é`, `..` passed)
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_WORKFLOW = re.compile(r"[^\x00-\x1f\x7f@]+")  # a path in the repository, no @ref


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _token_row(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "namespace": row["namespace"],
        "label": row["label"] or "",
        "scopes": (row["scopes"] or "").split(),
        "createdAt": row["created_at"],
        "expiresAt": row["expires_at"],
        "revokedAt": row["revoked_at"],
    }


def check_scopes(scopes: Sequence[str]) -> list[str]:
    wanted = sorted(set(scopes), key=lambda s: SCOPES.index(s) if s in SCOPES else 99)
    unknown = [s for s in wanted if s not in SCOPES]
    if unknown or not wanted:
        raise UsageError(
            f"invalid token scopes {', '.join(unknown) or '(none)'}",
            hint=f"use one or more of {', '.join(SCOPES)}",
        )
    return wanted


def check_token_fields(namespace: str, label: str, scopes: Sequence[str]) -> list[str]:
    """The checks every store applies to a new token (the scopes it gets returned), also run
    by the CLI before it opens or creates a registry for a token it would refuse."""
    if not NAMESPACE_RE.match(namespace):
        raise UsageError(
            f"invalid namespace {namespace!r}",
            hint="use 1-40 lowercase letters, digits and inner '-'",
        )
    if len(label) > MAX_LABEL or any(ord(c) < 32 for c in label):
        raise UsageError(f"token label must be at most {MAX_LABEL} printable characters")
    return check_scopes(scopes)


def new_token(
    namespace: str, label: str, scopes: Sequence[str], expires_at: str | None
) -> tuple[str, tuple[Any, ...]]:
    """A fresh token and its ``tokens`` row values (token_sha256, namespace, created_at, id,
    label, scopes, expires_at), after the checks every store applies."""
    wanted = check_token_fields(namespace, label, scopes)
    expires = normalize_time(expires_at) if expires_at else None
    token = "kiln_" + secrets.token_urlsafe(24)
    row = (_hash(token), namespace, now_iso(), token_id(token), label, " ".join(wanted), expires)
    return token, row


class PublisherWrites:
    """``add_trusted_publisher`` for every store: the row is checked here, once, and stored by
    the store's ``_insert_publisher``."""

    def _insert_publisher(self, record: dict[str, Any]) -> None:
        raise NotImplementedError

    def trusted_publishers(self, namespace: str | None = None) -> list[dict[str, Any]]:
        raise NotImplementedError

    def add_trusted_publisher(
        self,
        namespace: str,
        issuer: str,
        repository: str,
        workflow: str,
        environment: str = "",
        repository_id: str = "",
        owner_id: str = "",
    ) -> dict[str, Any]:
        record = new_publisher(
            namespace, issuer, repository, workflow, environment, repository_id, owner_id
        )
        for same in self.trusted_publishers(namespace):  # a second row would only confuse list
            if _identity(same) == _identity(record):
                raise UsageError(
                    f"{same['id']} already lets {repository} {workflow} publish to {namespace}",
                    hint=f"`kiln registry trusted-publisher remove {same['id']}` first to change it",
                )
        self._insert_publisher(record)
        return publisher_view(record)


class SQLiteAccounts(PublisherWrites):
    """Tokens, audit log and trusted publishers over the store's connection."""

    def connection(self) -> sqlite3.Connection:
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def create_token(
        self,
        namespace: str,
        *,
        label: str = "",
        scopes: Sequence[str] = SCOPES,
        expires_at: str | None = None,
    ) -> str:
        token, row = new_token(namespace, label, scopes, expires_at)
        with self.transaction() as db:
            db.execute(
                "INSERT INTO tokens (token_sha256, namespace, created_at, id, label, scopes,"
                " expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
                row,
            )
        return token

    def get_token(self, token: str) -> dict[str, Any] | None:
        row = (
            self.connection()
            .execute("SELECT * FROM tokens WHERE token_sha256=?", (_hash(token),))
            .fetchone()
        )
        return _token_row(row) if row else None

    def token_namespace(self, token: str) -> str | None:
        record = self.get_token(token)
        return record["namespace"] if record and token_live(record) else None

    def list_tokens(self, namespace: str | None = None) -> list[dict[str, Any]]:
        sql, params = "SELECT * FROM tokens", []
        if namespace:
            sql, params = sql + " WHERE namespace=?", [namespace]
        rows = self.connection().execute(sql + " ORDER BY created_at, id", params)
        return [_token_row(r) for r in rows]

    def revoke_token(self, token_id: str, namespace: str | None = None) -> dict[str, Any]:
        with self.transaction() as db:
            row = db.execute("SELECT * FROM tokens WHERE id=?", (token_id,)).fetchone()
            if row is None or (namespace and row["namespace"] != namespace):
                raise NotFound(
                    f"no token {token_id!r}",
                    hint="`kiln skills tokens` (or `kiln registry token list`) lists the ids",
                )
            if not row["revoked_at"]:
                db.execute("UPDATE tokens SET revoked_at=? WHERE id=?", (now_iso(), token_id))
            row = db.execute("SELECT * FROM tokens WHERE id=?", (token_id,)).fetchone()
        return _token_row(row)

    def record_audit(
        self,
        *,
        action: str,
        skill_id: str,
        version: str | None,
        sha256: str | None,
        token: dict[str, Any],
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO audit (at, action, skill_id, version, sha256, namespace, token_id,"
                " token_label) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    now_iso(),
                    action,
                    skill_id,
                    version,
                    sha256,
                    skill_id.partition("/")[0],
                    str(token.get("id", "")),
                    str(token.get("label", "")),
                ),
            )

    def audit_time(self, namespace: str, newest: int) -> str | None:
        row = (
            self.connection()
            .execute(
                "SELECT at FROM audit WHERE namespace = ? ORDER BY seq DESC LIMIT 1 OFFSET ?",
                (namespace, max(0, newest - 1)),
            )
            .fetchone()
        )
        return None if row is None else str(row[0])

    def audit_log(
        self, namespace: str | None = None, since: int = 0, limit: int = 100
    ) -> list[dict[str, Any]]:
        sql = "SELECT * FROM audit WHERE seq > ?"
        params: list[Any] = [since]
        if namespace:
            sql, params = sql + " AND namespace = ?", [*params, namespace]
        rows = self.connection().execute(
            sql + " ORDER BY seq LIMIT ?", [*params, max(1, min(limit, 1000))]
        )
        return [
            {
                "seq": r["seq"],
                "at": r["at"],
                "action": r["action"],
                "id": r["skill_id"],
                "version": r["version"],
                "sha256": r["sha256"],
                "namespace": r["namespace"],
                "tokenId": r["token_id"],
                "tokenLabel": r["token_label"],
            }
            for r in rows
        ]

    def _insert_publisher(self, record: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute(publisher_insert(":{}"), record)

    def pin_trusted_publisher(
        self, publisher_id: str, repository_id: str, owner_id: str
    ) -> dict[str, Any]:
        with self.transaction() as db:
            db.execute(
                "UPDATE trusted_publishers SET repository_id=?, owner_id=?"
                " WHERE id=? AND repository_id='' AND owner_id=''",
                (repository_id, owner_id, publisher_id),
            )
            row = db.execute("SELECT * FROM trusted_publishers WHERE id=?", (publisher_id,))
            found = row.fetchone()
        if found is None:
            raise NotFound(f"no trusted publisher {publisher_id!r}")
        return publisher_view(dict(found))

    def trusted_publishers(self, namespace: str | None = None) -> list[dict[str, Any]]:
        sql, params = "SELECT * FROM trusted_publishers", []
        if namespace:
            sql, params = sql + " WHERE namespace=?", [namespace]
        return [
            publisher_view(dict(r)) for r in self.connection().execute(sql + " ORDER BY id", params)
        ]

    def remove_trusted_publisher(self, publisher_id: str) -> None:
        with self.transaction() as db:
            cur = db.execute("DELETE FROM trusted_publishers WHERE id=?", (publisher_id,))
            if cur.rowcount == 0:
                raise NotFound(f"no trusted publisher {publisher_id!r}")

    def claim_jti(self, issuer: str, jti: str, expires_at: str) -> bool:
        with self.transaction() as db:
            db.execute("DELETE FROM oidc_jti WHERE expires_at < ?", (now_iso(),))
            cur = db.execute(
                "INSERT OR IGNORE INTO oidc_jti VALUES (?, ?, ?)", (issuer, jti, expires_at)
            )
            return cur.rowcount == 1


PUBLISHER_COLUMNS = (
    "id", "namespace", "issuer", "repository", "workflow", "environment", "created_at",
    "repository_id", "owner_id",
)  # fmt: skip


def publisher_insert(placeholder: str) -> str:
    """The INSERT of a ``new_publisher`` record, with the driver's named placeholders."""
    names = ", ".join(placeholder.format(c) for c in PUBLISHER_COLUMNS)
    return f"INSERT INTO trusted_publishers ({', '.join(PUBLISHER_COLUMNS)}) VALUES ({names})"


def new_publisher(
    namespace: str,
    issuer: str,
    repository: str,
    workflow: str,
    environment: str,
    repository_id: str,
    owner_id: str,
) -> dict[str, Any]:
    """A trusted publisher's row, every field checked (the same rules on every store)."""
    if not NAMESPACE_RE.match(namespace):
        raise UsageError(f"invalid namespace {namespace!r}")
    host = urlsplit(issuer).hostname or ""
    if not issuer.startswith("https://") and not (
        issuer.startswith("http://") and host in ("127.0.0.1", "localhost", "::1")
    ):
        raise UsageError(f"issuer {issuer!r} must be an https:// URL (http only on loopback)")
    parts = repository.split("/")
    if not _REPOSITORY.fullmatch(repository) or {".", ".."} & set(parts):
        raise UsageError(f"repository {repository!r} must be OWNER/NAME")
    steps = workflow.split("/")
    if not _WORKFLOW.fullmatch(workflow) or {"", ".", ".."} & set(steps):
        raise UsageError(
            f"workflow {workflow!r} must be a workflow file path such as "
            ".github/workflows/release.yml (no @ref)"
        )
    if any(not c.isprintable() for c in environment):
        raise UsageError(f"environment {environment!r} must be printable text")
    for value, option in ((repository_id, "--repository-id"), (owner_id, "--owner-id")):
        if value and not re.fullmatch(r"[0-9]+", value):  # isdigit() took `²`
            raise UsageError(f"{option} {value!r} must be the number the CI provider gives")
    return {
        "id": "tp_" + secrets.token_hex(6),
        "namespace": namespace,
        "issuer": issuer.rstrip("/"),
        "repository": repository,
        "workflow": workflow,
        "environment": environment,
        "created_at": now_iso(),
        "repository_id": repository_id,
        "owner_id": owner_id,
    }


def publisher_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "namespace": row["namespace"],
        "issuer": row["issuer"],
        "repository": row["repository"],
        "workflow": row["workflow"],
        "environment": row["environment"],
        "createdAt": row["created_at"],
        "repositoryId": row["repository_id"],
        "ownerId": row["owner_id"],
    }


def _identity(row: dict[str, Any]) -> tuple[str, ...]:
    """What an ID token is matched on (GitHub's names are case-blind)."""
    return (
        row["issuer"].rstrip("/"),
        row["repository"].lower(),
        row["workflow"],
        row["environment"],
    )
