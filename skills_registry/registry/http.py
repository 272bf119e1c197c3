"""What every registry endpoint shares: the app state and request/response helpers.

``Registry`` owns the stores, the signer, the OIDC key cache and a small cache of unpacked
archives for previews; handlers in ``app`` (reads) and ``writes`` reach it through
``registry_of(request)``. Version documents leave the server with a document signature: one
stored at publish, or (for documents published before documents were signed) made on read.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache, wraps
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from skills_registry import json_limits
from skills_registry.archive import ArchiveContents, read_archive
from skills_registry.registry.errors import (
    ArchiveError,
    InvalidId,
    NotFound,
    TooLarge,
    UsageError,
)
from skills_registry.registry.gitrepo import GitRepo, build_repo
from skills_registry.registry.id_rules import id_refusal
from skills_registry.registry.metadata import DEFAULT_TTL_SECONDS
from skills_registry.registry.oidc import JwksCache
from skills_registry.registry.ops import Metrics
from skills_registry.registry.quotas import Quotas
from skills_registry.registry.signing import Signer
from skills_registry.registry.storage import BlobStore, MetadataStore

log = logging.getLogger("kiln.registry")
MAX_JSON_BYTES = 64 * 1024
UNPACK_AT_ONCE = 2


class Registry:
    """The app's state: stores, signer, OIDC keys and unpacked archives for previews."""

    def __init__(
        self,
        store: MetadataStore,
        blobs: BlobStore,
        signer: Signer,
        name: str = "kiln-registry",
        *,
        metadata_ttl: int = DEFAULT_TTL_SECONDS,
        jwks: JwksCache | None = None,
        redirect_downloads: bool = False,
        base_url: str | None = None,
        quotas: Quotas | None = None,
    ) -> None:
        self.store, self.blobs, self.signer, self.name = store, blobs, signer, name
        self.quotas = quotas or Quotas()
        self.redirect_downloads = redirect_downloads
        self.base_url = base_url.rstrip("/") if base_url else None  # the public URL, if set
        self.metrics = Metrics()
        self.metadata_ttl = metadata_ttl
        self.jwks = jwks or JwksCache()
        # Unpacked archives for previews and git: up to 8 cached (32 MB each at most), and the
        # unpacking done by UNPACK_AT_ONCE threads of its own, so that concurrent previews of
        # many archives (each a few KB of gzip, anyone may ask) hold a few of them in memory,
        # not one per request (and not one per request thread's malloc arena, which keeps it).
        self._unpacker = ThreadPoolExecutor(UNPACK_AT_ONCE, thread_name_prefix="kiln-unpack")
        self.unpacked = lru_cache(maxsize=8)(self._unpack)
        self.git_repo = lru_cache(maxsize=16)(self._git_repo)
        self._commits: dict[tuple[str, str], str] = {}  # one short entry per release served
        self._unreadable: dict[tuple[str, str], ArchiveError] = {}

    @property
    def audience(self) -> str:
        """The ``aud`` an OIDC ID token must carry to publish here."""
        return self.name

    def _unpack(self, sha256: str) -> ArchiveContents:
        return self._unpacker.submit(lambda: read_archive(self.blobs.get(sha256))).result()

    def _git_repo(self, sha256: str, label: str) -> GitRepo:
        return build_repo(self.unpacked(sha256), label)

    def latest_repo(self, skill_id: str) -> GitRepo:
        """The git repository of the skill's latest non-yanked release."""
        skill = self.store.get_skill(served_id(skill_id))
        latest = skill.get("latestVersion") if skill else None
        doc = self.store.get_version(skill_id, latest) if latest else None
        if doc is None:
            raise NotFound(f"no released version of {skill_id}")
        return self.git_repo(doc["archiveSha256"], f"{skill_id}@{latest}")

    def commit_of(self, doc: dict[str, Any]) -> str:
        """A release's git commit, remembered: it never changes (fixed author and time), while
        building it unpacks the archive, and the marketplace lists every skill's on each
        request (before, past 16 skills, an anonymous request rebuilt them all)."""
        key = (doc["archiveSha256"], f"{doc['id']}@{doc['version']}")
        if key in self._unreadable:  # unpacked once: not again on every request
            raise self._unreadable[key]
        commit = self._commits.get(key)
        if commit is None:
            try:
                commit = self._commits[key] = self.git_repo(*key).commit
            except ArchiveError as exc:  # published before a rule it breaks (marketplace)
                log.warning("%s is left out of the marketplace: %s", key[1], exc)
                self._unreadable[key] = exc
                raise
        return commit

    def version_doc(self, request: Request) -> dict[str, Any]:
        skill_id = served_id(skill_id_of(request))
        version = request.path_params["version"]
        doc = self.store.get_version(skill_id, version)
        if doc is None:
            raise NotFound(
                f"no version {skill_id}@{version}", hint="list versions at /v1/skills/{id}/versions"
            )
        sig = doc["signatures"][0]
        if sig.get("keyId") == self.signer.key_id and "document" not in sig:
            sig["document"] = self.signer.sign_document(doc)
        return doc


class RefuseNul:
    """A path or query with a NUL (``%00``) is a JSON 400 before any handler sees it:
    PostgreSQL text cannot hold one, so it would reach a store only to become a 500."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        query = scope.get("query_string", b"")
        if scope["type"] == "http" and ("\x00" in scope["path"] or b"%00" in query):
            error = {"code": "bad_request", "message": "NUL in the path or query", "hint": ""}
            await json_response({"error": error}, status=400)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def inline(handler: Callable[[Request], Response]) -> Callable[[Request], Awaitable[Response]]:
    """Run a fast sync handler on the loop instead of starlette's thread pool."""

    @wraps(handler)
    async def endpoint(request: Request) -> Response:
        return handler(request)

    return endpoint


def json_response(
    data: Any, status: int = 200, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers=headers)


def skill_id_of(request: Request) -> str:
    return f"{request.path_params['namespace']}/{request.path_params['name']}"


def served_id(skill_id: str) -> str:
    """``skill_id`` when the registry serves it: one its id rules refuse is a 404 naming them
    (writes check ids and token namespaces on their own)."""
    refusal = id_refusal(skill_id)
    if refusal is not None:
        raise InvalidId(f"{refusal}; it is not served")
    return skill_id


def registry_of(request: Request) -> Registry:
    registry: Registry = request.app.state.registry
    return registry


def int_param(request: Request, name: str, default: int, *, minimum: int = -(2**63)) -> int:
    """An integer query parameter that every store can bind: a 64-bit one, at least ``minimum``
    (SQLite and PostgreSQL refuse larger integers, which would otherwise be a 500)."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    # ASCII digits only: int() also reads `1_0`, ` 5`, `+5` and other scripts' digits (`٣`)
    if re.fullmatch(r"-?[0-9]+", raw) is None or len(raw) > 4000:
        raise UsageError(f"query parameter {name!r} must be an integer")
    value = int(raw)
    if not minimum <= value < 2**63:
        raise UsageError(
            f"query parameter {name!r} must be an integer from {minimum} to {2**63 - 1}"
        )
    return value


async def read_body(request: Request, cap: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise TooLarge(f"request body is {declared} bytes; the limit is {cap}")
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > cap:
            raise TooLarge(f"request body exceeds {cap} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request, *, required: bool = False) -> dict[str, Any]:
    body = await read_body(request, MAX_JSON_BYTES)
    if required and not body.strip():
        raise UsageError("request body is empty; send a JSON object")
    try:
        data = json_limits.loads(body or b"{}", nul=False)
    except UnicodeDecodeError:
        raise UsageError("request body is not valid JSON") from None
    except ValueError as exc:  # also nesting that would blow the parser's stack
        raise UsageError(f"request body is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError("request body must be a JSON object")
    return data
