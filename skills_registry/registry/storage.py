"""Where the registry keeps things: a metadata store and a content-addressed blob store.

Both are small Protocols so a deployment can swap the embedded defaults (one SQLite file and a
``blobs/`` folder under ``--data``) for PostgreSQL and object storage without touching the app.
Version documents are stored whole as JSON; the columns beside them exist only to search, sort
and resolve. Published versions are immutable: the only later writes are status, dist-tags and
deprecation, and each write is recorded in the change feed that mirrors follow and in the audit
log with the token that made it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from skills_registry.registry.errors import NotFound, UsageError
from skills_registry.registry.quotas import NamespaceUsage, Quotas, Usage

STATUSES = ("active", "deprecated", "yanked")
# What a token may do: publish versions; yank/restore/deprecate; move dist-tags.
SCOPES = ("publish", "yank", "tag")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def normalize_time(text: str) -> str:
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"invalid timestamp {text!r}", hint="use ISO 8601, e.g. 2026-01-31T12:00:00Z"
        ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def encode_cursor(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> dict[str, Any]:
    """What ``encode_cursor`` made: ``{"offset": N, "upto": PK}`` or ``{"after": ID}``. A cursor
    is the client's to send, so anything else (an offset past 64 bits, a list, a NUL) is refused
    here rather than reaching a query as a 500."""
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except Exception:  # noqa: BLE001 - any garbage cursor is the same user mistake
        value = None
    offset = value.get("offset", 0) if isinstance(value, dict) else None
    after = value.get("after", "") if isinstance(value, dict) else None
    upto = value.get("upto", 0) if isinstance(value, dict) else None
    if (
        not isinstance(value, dict)
        or not set(value) <= {"offset", "after", "upto"}
        or type(offset) is not int
        or not 0 <= offset < 2**31
        or type(upto) is not int
        or not 0 <= upto < 2**63
        or not isinstance(after, str)
        or "\x00" in after
    ):
        raise UsageError("invalid cursor", hint="pass back metadata.nextCursor unchanged")
    return value


class BlobStore(Protocol):
    """Archives by sha256. ``put`` returns only once the stored bytes are known to hash right."""

    def put(self, data: bytes) -> str: ...
    def get(self, sha256: str) -> bytes: ...
    def path(self, sha256: str) -> Path | None: ...
    def size(self, sha256: str) -> int | None: ...
    def stream(self, sha256: str, start: int = 0, end: int | None = None) -> Iterator[bytes]: ...
    def presigned_url(self, sha256: str, filename: str) -> str | None: ...
    def unreferenced_candidates(self, older_than: float) -> Iterator[str]: ...
    def delete(self, sha256: str) -> None: ...
    def ping(self) -> None: ...


class MetadataStore(Protocol):
    """Skills, versions, tokens and the audit log. Contracts every implementation keeps:

    - ``add_version`` raises ``Conflict`` for an existing ``id@version``; a store never rewrites
      a stored document. ``get_version`` adds the mutable ``status``/``statusReason``. Given
      ``quotas``, it counts the namespace's usage inside its transaction, one publish per
      namespace at a time across processes, and raises ``QuotaExceeded``/``RateLimited``
      (``quotas.check``) before inserting anything; ``quota_usage`` is the same count outside
      a transaction, for the early refusal before an upload is read; ``namespace_usage`` is
      the namespace's whole usage (every skill's version count), for its owner to read.
    - ``get_skill`` returns ``changeSeq``: the ``seq`` of that skill's newest change-feed entry.
      It only grows; signed metadata carries it so clients can refuse a rollback.
      ``last_seq`` is the newest entry's ``seq`` (0 when empty); ``advance_seq(floor)`` makes
      every later entry's ``seq`` greater than ``floor`` (a migrated registry's clients have
      seen the source's numbers).
    - ``search`` with a query ranks by BM25 with OR semantics over stemmed words (name weighted
      above description) plus a trigram path for CJK text; without one it lists by id.
    - Tokens are stored hashed. ``create_token`` returns the secret once; its public id is
      ``token_id(secret)``. ``get_token`` returns the record whatever its state (the caller
      decides what expired or revoked means to the user); ``token_namespace`` only for a live
      token. Records never include the secret or its hash.
    - ``record_audit`` is called after every successful write with who did it; ``audit_log``
      reads it back oldest first.
    - ``claim_jti`` is true exactly once per OIDC token id (replay protection).
    - ``lookalike`` names an existing skill that reads like ``skill_id`` but is another skill
      (``LOOKALIKE_SQL``: its name, or its whole id, equal once ``0``/``1`` read as ``o``/``l``),
      or None; indexed, so the first publish of a skill stays cheap in a large catalogue.
    """

    def add_version(self, doc: dict[str, Any], quotas: Quotas | None = None) -> None: ...
    def quota_usage(self, skill_id: str) -> Usage: ...
    def namespace_usage(self, namespace: str) -> NamespaceUsage: ...
    def get_skill(self, skill_id: str) -> dict[str, Any] | None: ...
    def search(
        self,
        query: str = "",
        *,
        namespace: str | None = None,
        updated_since: str | None = None,
        cursor: str | None = None,
        limit: int = 20,
    ) -> tuple[list[dict[str, Any]], str | None]: ...
    def versions(self, skill_id: str) -> list[dict[str, Any]]: ...
    def get_version(self, skill_id: str, version: str) -> dict[str, Any] | None: ...
    def set_status(
        self, skill_id: str, version: str, status: str, reason: str = ""
    ) -> dict[str, Any]: ...
    def set_deprecation(self, skill_id: str, message: str | None) -> None: ...
    def set_dist_tag(self, skill_id: str, tag: str, version: str | None) -> None: ...
    def changes(self, since: int, limit: int) -> list[dict[str, Any]]: ...
    def last_seq(self) -> int: ...
    def advance_seq(self, floor: int) -> None: ...
    def count(self) -> int: ...
    def lookalike(self, skill_id: str) -> str | None: ...

    # Operations: readiness, the one signing key of a shared database, orphan-archive sweeping.
    def ping(self) -> None: ...
    def bind_signing_key(self, key_id: str) -> None: ...
    def archive_referenced(self, sha256: str) -> bool: ...

    # Tokens: {id, namespace, label, scopes: [..], createdAt, expiresAt|None, revokedAt|None}
    def create_token(
        self,
        namespace: str,
        *,
        label: str = "",
        scopes: Sequence[str] = SCOPES,
        expires_at: str | None = None,
    ) -> str: ...
    def get_token(self, token: str) -> dict[str, Any] | None: ...
    def token_namespace(self, token: str) -> str | None: ...
    def list_tokens(self, namespace: str | None = None) -> list[dict[str, Any]]: ...
    def revoke_token(self, token_id: str, namespace: str | None = None) -> dict[str, Any]: ...

    # Audit: {seq, at, action, id, version, sha256, namespace, tokenId, tokenLabel}
    def record_audit(
        self,
        *,
        action: str,
        skill_id: str,
        version: str | None,
        sha256: str | None,
        token: dict[str, Any],
    ) -> None: ...
    def audit_log(
        self, namespace: str | None = None, since: int = 0, limit: int = 100
    ) -> list[dict[str, Any]]: ...
    # the `at` of the namespace's `newest`-th newest audit entry (1: the newest); None if fewer
    def audit_time(self, namespace: str, newest: int) -> str | None: ...

    # Trusted publishers (OIDC): {id, namespace, issuer, repository, workflow, environment,
    # repositoryId, ownerId} ("" for an id not known yet)
    def add_trusted_publisher(
        self,
        namespace: str,
        issuer: str,
        repository: str,
        workflow: str,
        environment: str = "",
        repository_id: str = "",
        owner_id: str = "",
    ) -> dict[str, Any]: ...
    def pin_trusted_publisher(
        self, publisher_id: str, repository_id: str, owner_id: str
    ) -> dict[str, Any]: ...
    def trusted_publishers(self, namespace: str | None = None) -> list[dict[str, Any]]: ...
    def remove_trusted_publisher(self, publisher_id: str) -> None: ...
    def claim_jti(self, issuer: str, jti: str, expires_at: str) -> bool: ...


def token_id(token: str) -> str:
    """The public id of a token secret: safe to list, log and revoke by."""
    return "tok_" + hashlib.sha256(token.encode()).hexdigest()[:12]


def token_live(record: dict[str, Any], at: str | None = None) -> bool:
    """Neither revoked nor past ``expiresAt`` (ISO 8601 UTC strings compare as text)."""
    if record.get("revokedAt"):
        return False
    expires = record.get("expiresAt")
    return not expires or expires > (at or now_iso())


class BlobDir:
    """Blobs at ``<root>/<aa>/<sha256>``, written to a temp name then renamed (never partial)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, sha256: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise NotFound(f"no blob {sha256!r}")
        return self.root / sha256[:2] / sha256

    def put(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        target = self._path(sha)
        try:  # already there (an earlier publish left it): young again, as a new write would be,
            os.utime(target)  # so the sweep spares it while this publish writes its row
        except FileNotFoundError:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{sha}.{os.getpid()}.{threading.get_ident()}")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        return sha

    def get(self, sha256: str) -> bytes:
        path = self.path(sha256)
        if path is None:
            raise NotFound(f"no blob {sha256}")
        return path.read_bytes()

    def path(self, sha256: str) -> Path | None:
        target = self._path(sha256)
        return target if target.exists() else None

    def size(self, sha256: str) -> int | None:
        path = self.path(sha256)
        return path.stat().st_size if path is not None else None

    def stream(self, sha256: str, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        path = self.path(sha256)
        if path is None:
            raise NotFound(f"no blob {sha256}")
        with path.open("rb") as handle:
            handle.seek(start)
            left = None if end is None else end - start + 1
            while left is None or left > 0:
                chunk = handle.read(65536 if left is None else min(65536, left))
                if not chunk:
                    return
                left = None if left is None else left - len(chunk)
                yield chunk

    def presigned_url(self, sha256: str, filename: str) -> str | None:
        return None  # a folder has no URL of its own: the server streams it

    def unreferenced_candidates(self, older_than: float) -> Iterator[str]:
        """Blobs written more than ``older_than`` seconds ago (the sweeper checks references)."""
        cutoff = time.time() - older_than
        if not self.root.is_dir():
            return
        for path in self.root.glob("??/*"):
            if re.fullmatch(r"[0-9a-f]{64}", path.name) and path.stat().st_mtime < cutoff:
                yield path.name

    def delete(self, sha256: str) -> None:
        self._path(sha256).unlink(missing_ok=True)

    def ping(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if not os.access(self.root, os.W_OK):
            raise OSError(f"{self.root} is not writable")


def open_storage(data_dir: Path) -> tuple[MetadataStore, BlobDir]:
    """The embedded defaults under ``data_dir``: ``registry.db`` and ``blobs/``."""
    from skills_registry.registry.sqlite_store import SQLiteStore

    data_dir = Path(data_dir)
    return SQLiteStore(data_dir / "registry.db"), BlobDir(data_dir / "blobs")
