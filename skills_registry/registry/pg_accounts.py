"""Tokens, the audit log and trusted publishers on PostgreSQL: ``sqlite_accounts``' twin.

Same records and rules (hashed secrets with a public id, scopes, expiry, revocation; one audit
row per write; OIDC publishers and single-use token ids), on the shared database so every
instance sees a revocation at once. Mixed into ``PostgresStore``, which provides ``_tx`` and
``_read``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from skills_registry.registry.errors import NotFound
from skills_registry.registry.sqlite_accounts import (
    PublisherWrites,
    new_token,
    publisher_insert,
    publisher_view,
)
from skills_registry.registry.storage import (
    SCOPES,
    now_iso,
    token_live,
)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _token_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "namespace": row["namespace"],
        "label": row["label"] or "",
        "scopes": (row["scopes"] or "").split(),
        "createdAt": row["created_at"],
        "expiresAt": row["expires_at"],
        "revokedAt": row["revoked_at"],
    }


class PostgresAccounts(PublisherWrites):
    def _tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _read(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
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
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO tokens (token_sha256, namespace, created_at, id, label, scopes,"
                " expires_at, revoked_at) VALUES (%s, %s, %s, %s, %s, %s, %s, NULL)",
                row,
            )
        return token

    def get_token(self, token: str) -> dict[str, Any] | None:
        rows = self._read("SELECT * FROM tokens WHERE token_sha256=%s", (_hash(token),))
        return _token_row(rows[0]) if rows else None

    def token_namespace(self, token: str) -> str | None:
        record = self.get_token(token)
        return record["namespace"] if record and token_live(record) else None

    def list_tokens(self, namespace: str | None = None) -> list[dict[str, Any]]:
        where, params = ("WHERE namespace=%s", [namespace]) if namespace else ("", [])
        rows = self._read(f"SELECT * FROM tokens {where} ORDER BY created_at, id", params)
        return [_token_row(r) for r in rows]

    def revoke_token(self, token_id: str, namespace: str | None = None) -> dict[str, Any]:
        with self._tx() as conn:
            row = conn.execute(
                "SELECT * FROM tokens WHERE id=%s FOR UPDATE", (token_id,)
            ).fetchone()
            if row is None or (namespace and row["namespace"] != namespace):
                raise NotFound(
                    f"no token {token_id!r}",
                    hint="`kiln skills tokens` (or `kiln registry token list`) lists the ids",
                )
            if not row["revoked_at"]:
                conn.execute("UPDATE tokens SET revoked_at=%s WHERE id=%s", (now_iso(), token_id))
            row = conn.execute("SELECT * FROM tokens WHERE id=%s", (token_id,)).fetchone()
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
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO audit (at, action, skill_id, version, sha256, namespace, token_id,"
                " token_label) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
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
        rows = self._read(
            "SELECT at FROM audit WHERE namespace = %s ORDER BY seq DESC LIMIT 1 OFFSET %s",
            (namespace, max(0, newest - 1)),
        )
        return str(rows[0]["at"]) if rows else None

    def audit_log(
        self, namespace: str | None = None, since: int = 0, limit: int = 100
    ) -> list[dict[str, Any]]:
        params: list[Any]
        sql, params = "SELECT * FROM audit WHERE seq > %s", [since]
        if namespace:
            sql, params = sql + " AND namespace = %s", [*params, namespace]
        rows = self._read(sql + " ORDER BY seq LIMIT %s", [*params, max(1, min(limit, 1000))])
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
        with self._tx() as conn:
            conn.execute(publisher_insert("%({})s"), record)

    def pin_trusted_publisher(
        self, publisher_id: str, repository_id: str, owner_id: str
    ) -> dict[str, Any]:
        with self._tx() as conn:
            conn.execute(
                "UPDATE trusted_publishers SET repository_id=%s, owner_id=%s"
                " WHERE id=%s AND repository_id='' AND owner_id=''",
                (repository_id, owner_id, publisher_id),
            )
            found = conn.execute(
                "SELECT * FROM trusted_publishers WHERE id=%s", (publisher_id,)
            ).fetchone()
        if found is None:
            raise NotFound(f"no trusted publisher {publisher_id!r}")
        return publisher_view(found)

    def trusted_publishers(self, namespace: str | None = None) -> list[dict[str, Any]]:
        where, params = ("WHERE namespace=%s", [namespace]) if namespace else ("", [])
        return [
            publisher_view(r)
            for r in self._read(f"SELECT * FROM trusted_publishers {where} ORDER BY id", params)
        ]

    def remove_trusted_publisher(self, publisher_id: str) -> None:
        with self._tx() as conn:
            cur = conn.execute("DELETE FROM trusted_publishers WHERE id=%s", (publisher_id,))
            if cur.rowcount == 0:
                raise NotFound(f"no trusted publisher {publisher_id!r}")

    def claim_jti(self, issuer: str, jti: str, expires_at: str) -> bool:
        with self._tx() as conn:
            conn.execute("DELETE FROM oidc_jti WHERE expires_at < %s", (now_iso(),))
            cur = conn.execute(
                "INSERT INTO oidc_jti VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (issuer, jti, expires_at),
            )
            return bool(cur.rowcount == 1)
