"""The registry's HTTP API (starlette): JSON under ``/v1``, shaped after the MCP registry and npm.

Reads run inline on the event loop: each is a sub-millisecond SQLite query, and handing them
to a thread pool costs more than it saves (under 200 concurrent clients the GIL convoy between
pool threads and the loop cut throughput by 3x). Heavier work goes to the pool: publish (hash,
scan, sign, after streaming its body under a byte cap), file previews (unpacking) and the
marketplace (a walk over every skill). Every error is JSON
``{"error": {"code", "message", "hint"}}`` and a 422 also lists ``errors``, all of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Match, Route

from skills_registry.archive import MAX_ARCHIVE_BYTES, MAX_FILES, MAX_UNPACKED_BYTES
from skills_registry.registry import writes
from skills_registry.registry.backends import load_signer, open_backends
from skills_registry.registry.downloads import serve_archive
from skills_registry.registry.errors import (
    FIND_SKILL_HINT,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RegistryError,
    UsageError,
    ValidationFailed,
)
from skills_registry.registry.git_http import git_files, git_refused, git_upload_pack
from skills_registry.registry.http import (
    MAX_JSON_BYTES,
    RefuseNul,
    Registry,
    inline,
    int_param,
    registry_of,
    served_id,
    skill_id_of,
)
from skills_registry.registry.http import json_response as _json
from skills_registry.registry.id_rules import id_refusal, served_changes
from skills_registry.registry.marketplace import build_marketplace
from skills_registry.registry.metadata import DEFAULT_TTL_SECONDS, skill_metadata
from skills_registry.registry.oidc import JwksCache
from skills_registry.registry.ops import Observe, healthz, metrics, readyz
from skills_registry.registry.quotas import Quotas
from skills_registry.registry.semver import Version
from skills_registry.registry.signing import Signer
from skills_registry.registry.storage import BlobStore, MetadataStore

INLINE_DOWNLOAD_BYTES = 256 * 1024
API_VERSION = "v1"
_reg, _int_param, _inline = registry_of, int_param, inline  # short local names


def _skill_id(request: Request) -> str:
    """The path's skill id, refused (404 naming the id rules) when the registry serves none such."""
    return served_id(skill_id_of(request))


def well_known(request: Request) -> Response:
    reg = _reg(request)
    return _json(
        {
            "name": reg.name,
            "apiVersion": API_VERSION,
            "api": _base(request) + "/v1",
            "keys": [
                {
                    "keyId": reg.signer.key_id,
                    "algorithm": "ed25519",
                    "publicKey": reg.signer.public_key_b64,
                }
            ],
            "limits": {
                "archiveBytes": MAX_ARCHIVE_BYTES,
                "unpackedBytes": MAX_UNPACKED_BYTES,
                "files": MAX_FILES,
                "jsonBytes": MAX_JSON_BYTES,
                **reg.quotas.limits(),
            },
            "skills": reg.store.count(),
            "metadataTtlSeconds": reg.metadata_ttl,
            "oidc": {"audience": reg.audience, "exchange": "/v1/oidc/token"},
        },
        headers=_vary(request),
    )


def signed_metadata(request: Request) -> Response:
    """Versions with status and sha256, dist-tags and deprecation, signed with an expiry."""
    reg = _reg(request)
    envelope = skill_metadata(
        reg.store, reg.signer, _skill_id(request), ttl_seconds=reg.metadata_ttl
    )
    return _json(envelope, headers={"Cache-Control": "no-cache"})


def list_skills(request: Request) -> Response:
    params = request.query_params
    items, cursor = _reg(request).store.search(
        params.get("q", ""),
        namespace=params.get("namespace") or None,
        updated_since=params.get("updated_since") or None,
        cursor=params.get("cursor") or None,
        limit=_int_param(request, "limit", 20),
    )
    # an id written before the id rules held is not served (served_id), so it is not listed
    items = [item for item in items if id_refusal(str(item["id"])) is None]
    return _json({"skills": items, "metadata": {"count": len(items), "nextCursor": cursor}})


def skill_detail(request: Request) -> Response:
    skill_id = _skill_id(request)
    store = _reg(request).store
    skill = store.get_skill(skill_id)
    if skill is None:
        raise NotFound(f"no skill {skill_id}", hint=FIND_SKILL_HINT)
    skill["versions"] = store.versions(skill_id)
    return _json(skill)


def list_versions(request: Request) -> Response:
    skill_id = _skill_id(request)
    store = _reg(request).store
    if store.get_skill(skill_id) is None:
        raise NotFound(f"no skill {skill_id}")
    versions = store.versions(skill_id)
    limit = max(1, min(_int_param(request, "limit", 100), 100))
    cursor = request.query_params.get("cursor") or ""
    if cursor and not cursor.lstrip("-").isdigit():
        # the last version of the previous page: versions newly published (usually above it)
        # do not push one already listed onto the next page, as an offset would
        try:
            after = Version.parse(cursor).key()
        except UsageError:
            raise UsageError("invalid cursor", hint="pass back metadata.nextCursor") from None
        start = sum(1 for v in versions if Version.parse(v["version"]).key() >= after)
    else:  # an offset, as cursors were before
        start = _int_param(request, "cursor", 0, minimum=0) if cursor else 0
    page = versions[start : start + limit]
    more = start + limit < len(versions)
    return _json(
        {
            "versions": page,
            "metadata": {"count": len(page), "nextCursor": page[-1]["version"] if more else None},
        }
    )


def version_detail(request: Request) -> Response:
    return _json(_reg(request).version_doc(request))


async def download(request: Request) -> Response:
    reg = _reg(request)
    doc = reg.version_doc(request)  # yanked versions stay downloadable by exact version
    return await serve_archive(reg, request, doc)


def file_preview(request: Request) -> Response:
    reg = _reg(request)
    doc = reg.version_doc(request)
    path = request.path_params["path"]
    contents = reg.unpacked(doc["archiveSha256"])
    if path not in contents.files:
        raise NotFound(f"no file {path!r} in {doc['id']}@{doc['version']}")
    data = contents.files[path]
    try:
        data.decode("utf-8")
        media = "text/plain; charset=utf-8"
    except UnicodeDecodeError:
        media = "application/octet-stream"
    return Response(
        data,
        media_type=media,
        headers={
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "sandbox; default-src 'none'",
        },
    )


def tool_schemas(request: Request) -> Response:
    doc = _reg(request).version_doc(request)
    return _json({"id": doc["id"], "version": doc["version"], "tools": doc.get("tools", [])})


def change_feed(request: Request) -> Response:
    since = _int_param(request, "since", 0, minimum=0)
    # an id written before the id rules held is not served, so its entries are not listed
    changes, next_since = served_changes(
        _reg(request).store.changes, since, _int_param(request, "limit", 100)
    )
    return _json({"changes": changes, "metadata": {"nextSince": next_since}})


def marketplace(request: Request) -> Response:
    """Plugins point at absolute git URLs pinned by commit, so URL-added marketplaces install."""
    reg = _reg(request)
    market = build_marketplace(reg.store, _base(request), name=reg.name, git_commit=reg.commit_of)
    return _json(market, headers=_vary(request))


def _base(request: Request) -> str:
    """The registry's public URL: ``--base-url``, else what the request's ``Host`` names (the
    sender picks it, so such answers carry ``Vary: Host``: a cache in front never hands one
    built for a forged Host to anyone else)."""
    reg = _reg(request)
    return reg.base_url or str(request.base_url).rstrip("/")


def _vary(request: Request) -> dict[str, str]:
    return {} if _reg(request).base_url else {"Vary": "Host"}


async def on_registry_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RegistryError)
    body: dict[str, Any] = {"error": {"code": exc.code, "message": str(exc), "hint": exc.hint}}
    headers: dict[str, str] = {}
    if isinstance(exc, ValidationFailed):
        body["errors"] = exc.errors
    if isinstance(exc, QuotaExceeded):
        body["error"].update(quota=exc.quota, usage=exc.usage, limit=exc.limit)
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(exc.retry_after)
    return _json(body, status=exc.status, headers=headers)


async def on_client_gone(request: Request, exc: Exception) -> Response:
    """The client closed the connection (or was cut off as too slow) mid-body: nobody is left
    to answer, and it is no server error to log with a traceback."""
    return Response(status_code=400)


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404 and (slash := _without_slash(request)) is not None:
        return Response(status_code=307, headers={"Location": slash})
    headers = dict(exc.headers or {})
    if exc.status_code == 405:  # starlette names only the first route's methods for the path
        headers["Allow"] = ", ".join(_allowed(request))
    return _json(
        {"error": {"code": "http_error", "message": exc.detail, "hint": ""}},
        status=exc.status_code,
        headers=headers,
    )


def _without_slash(request: Request) -> str | None:
    """``/v1/skills/`` answered with ``Location: /v1/skills`` when that path is served: relative,
    where starlette's own redirect wrote the absolute URL from the request's ``Host`` header (a
    forged one sent clients, and any cache in front, to another host)."""
    path = request.scope["path"]
    stripped = path.rstrip("/")
    if path == stripped or not stripped.startswith("/") or stripped.startswith("//"):
        return None
    scope = {**request.scope, "path": stripped}
    if not any(route.matches(scope)[0] is not Match.NONE for route in request.app.routes):
        return None
    query = request.scope.get("query_string", b"").decode("latin-1")
    return quote(stripped, safe="/:@!$&'()*+,;=-._~%") + (f"?{query}" if query else "")


def _allowed(request: Request) -> list[str]:
    """Every method some route takes at this path (GET and PUT of a version are two routes)."""
    methods: set[str] = set()
    for route in request.app.routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE and isinstance(route, Route):
            methods |= route.methods or set()
    return sorted(methods)


async def on_server_error(request: Request, exc: Exception) -> Response:
    """Any other exception: the error shape clients parse, with nothing of the fault in it
    (its text can name files and hosts); uvicorn logs the traceback on the server's stderr."""
    error = {
        "code": "internal_error",
        "message": "the registry failed to handle this request",
        "hint": "try again later; if it persists, tell the registry's operator",
    }
    return _json({"error": error}, status=500)


_SKILL = "/v1/skills/{namespace}/{name}"
_VERSION = _SKILL + "/versions/{version}"


def create_app(
    data_dir: Path,
    *,
    name: str = "kiln-registry",
    metadata_ttl: int = DEFAULT_TTL_SECONDS,
    db: str | None = None,
    blobs: str | None = None,
    signing_key: Path | None = None,
    redirect_downloads: bool = False,
    base_url: str | None = None,
    quotas: Quotas | None = None,
) -> Starlette:
    """Build the ASGI app; without ``db``/``blobs`` URLs the stores live under ``data_dir``."""
    backends = open_backends(Path(data_dir), db, blobs)
    return create_app_with(
        backends.store,
        backends.blobs,
        load_signer(Path(data_dir), signing_key, store=backends.store),
        name=name,
        metadata_ttl=metadata_ttl,
        redirect_downloads=redirect_downloads,
        base_url=base_url,
        quotas=quotas,
    )


def create_app_with(
    store: MetadataStore,
    blobs: BlobStore,
    signer: Signer,
    *,
    name: str = "kiln-registry",
    metadata_ttl: int = DEFAULT_TTL_SECONDS,
    jwks: JwksCache | None = None,
    redirect_downloads: bool = False,
    base_url: str | None = None,
    quotas: Quotas | None = None,
) -> Starlette:
    """The app over given stores; refuses a database already bound to another signing key."""
    store.bind_signing_key(signer.key_id)
    routes = [
        Route("/healthz", _inline(healthz)),
        Route("/readyz", readyz),
        Route("/metrics", metrics),
        Route("/.well-known/kiln-registry.json", _inline(well_known)),
        Route("/v1/skills", _inline(list_skills)),
        Route("/v1/whoami", _inline(writes.whoami)),
        Route("/v1/tokens", _inline(writes.list_tokens)),
        Route("/v1/tokens/{token_id}", writes.revoke_token, methods=["DELETE"]),
        Route("/v1/audit", _inline(writes.audit_log)),
        Route("/v1/namespaces/{namespace}/usage", _inline(writes.namespace_usage)),
        Route("/v1/oidc/token", writes.oidc_exchange, methods=["POST"]),
        Route("/v1/changes", _inline(change_feed)),
        Route("/v1/marketplace.json", marketplace),
        Route("/.claude-plugin/marketplace.json", marketplace),
        Route("/git/{namespace}/{repo}/git-upload-pack", git_upload_pack, methods=["POST"]),
        Route("/git/{namespace}/{repo}/git-receive-pack", git_refused, methods=["POST"]),
        Route("/git/{namespace}/{repo}/{rest:path}", git_files),
        Route(_SKILL, _inline(skill_detail)),
        Route(_SKILL + "/metadata", _inline(signed_metadata)),
        Route(_SKILL + "/versions", _inline(list_versions)),
        Route(_SKILL + "/deprecation", writes.set_deprecation, methods=["PUT"]),
        Route(_SKILL + "/dist-tags/{tag}", writes.set_dist_tag, methods=["PUT", "DELETE"]),
        Route(_VERSION, _inline(version_detail), methods=["GET"]),
        Route(_VERSION, writes.publish, methods=["PUT", "POST"]),
        Route(_VERSION + "/status", writes.set_status, methods=["PUT"]),
        Route(_VERSION + "/archive", download),
        Route(_VERSION + "/tools", _inline(tool_schemas)),
        Route(_VERSION + "/files/{path:path}", file_preview),
    ]
    registry = Registry(
        store,
        blobs,
        signer,
        name,
        metadata_ttl=metadata_ttl,
        jwks=jwks,
        redirect_downloads=redirect_downloads,
        base_url=base_url,
        quotas=quotas,
    )
    app = Starlette(
        routes=routes,
        exception_handlers={
            RegistryError: on_registry_error,
            HTTPException: on_http_error,
            ClientDisconnect: on_client_gone,
            500: on_server_error,
        },
        middleware=[Middleware(Observe, metrics=registry.metrics), Middleware(RefuseNul)],
    )
    app.router.redirect_slashes = False  # see _without_slash
    app.state.registry = registry
    return app
