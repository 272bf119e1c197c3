"""The registry's HTTP API (starlette): JSON under ``/v1``, shaped after the MCP registry and npm.

Reads run inline on the event loop: each is a sub-millisecond SQLite query, and handing them
to a thread pool costs more than it saves (under 200 concurrent clients the GIL convoy between
pool threads and the loop cut throughput by 3x). Heavier work goes to the pool: publish (hash,
scan, sign, after streaming its body under a byte cap), file previews (unpacking) and the
marketplace (a walk over every skill). Every error is JSON
``{"error": {"code", "message", "hint"}}`` and a 422 also lists ``errors``, all of them.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import lru_cache, wraps
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from skills_registry.archive import (
    MAX_ARCHIVE_BYTES,
    MAX_FILES,
    MAX_UNPACKED_BYTES,
    ArchiveContents,
    read_archive,
)
from skills_registry.registry.errors import (
    Forbidden,
    NotFound,
    RegistryError,
    TooLarge,
    Unauthorized,
    UsageError,
    ValidationFailed,
)
from skills_registry.registry.marketplace import build_marketplace
from skills_registry.registry.publish import build_release, check_id
from skills_registry.registry.signing import Signer, load_or_create_signer
from skills_registry.registry.storage import BlobStore, MetadataStore, open_storage

MAX_JSON_BYTES = 64 * 1024
INLINE_DOWNLOAD_BYTES = 256 * 1024
API_VERSION = "v1"


def _inline(handler: Callable[[Request], Response]) -> Callable[[Request], Awaitable[Response]]:
    """Run a fast sync handler on the loop instead of starlette's thread pool."""

    @wraps(handler)
    async def endpoint(request: Request) -> Response:
        return handler(request)

    return endpoint


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers=headers)


class Registry:
    """The app's state: stores, signer and a small cache of unpacked archives for previews."""

    def __init__(
        self, store: MetadataStore, blobs: BlobStore, signer: Signer, name: str = "kiln-registry"
    ) -> None:
        self.store, self.blobs, self.signer, self.name = store, blobs, signer, name
        self.unpacked = lru_cache(maxsize=8)(self._unpack)  # bounded: up to 8 x 32 MB worst case

    def _unpack(self, sha256: str) -> ArchiveContents:
        return read_archive(self.blobs.get(sha256))

    def version_doc(self, request: Request) -> dict[str, Any]:
        skill_id = _skill_id(request)
        version = request.path_params["version"]
        doc = self.store.get_version(skill_id, version)
        if doc is None:
            raise NotFound(
                f"no version {skill_id}@{version}", hint="list versions at /v1/skills/{id}/versions"
            )
        return doc


def _skill_id(request: Request) -> str:
    return f"{request.path_params['namespace']}/{request.path_params['name']}"


def _reg(request: Request) -> Registry:
    registry: Registry = request.app.state.registry
    return registry


def _int_param(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise UsageError(f"query parameter {name!r} must be an integer") from None


def _authorize(request: Request, namespace: str) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("a bearer token is required")
    owner = _reg(request).store.token_namespace(token.strip())
    if owner is None:
        raise Unauthorized("the token is not known to this registry")
    if owner != namespace:
        raise Forbidden(
            f"the token is scoped to namespace {owner!r}, not {namespace!r}",
            hint=f"publish as {owner}/<name> or get a token for {namespace!r}",
        )
    return owner


async def _read_body(request: Request, cap: int) -> bytes:
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


async def _read_json(request: Request) -> dict[str, Any]:
    body = await _read_body(request, MAX_JSON_BYTES)
    try:
        data = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UsageError("request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise UsageError("request body must be a JSON object")
    return data


def well_known(request: Request) -> Response:
    reg = _reg(request)
    return _json(
        {
            "name": reg.name,
            "apiVersion": API_VERSION,
            "api": str(request.base_url).rstrip("/") + "/v1",
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
            },
            "skills": reg.store.count(),
        }
    )


def list_skills(request: Request) -> Response:
    params = request.query_params
    items, cursor = _reg(request).store.search(
        params.get("q", ""),
        namespace=params.get("namespace") or None,
        updated_since=params.get("updated_since") or None,
        cursor=params.get("cursor") or None,
        limit=_int_param(request, "limit", 20),
    )
    return _json({"skills": items, "metadata": {"count": len(items), "nextCursor": cursor}})


def skill_detail(request: Request) -> Response:
    skill_id = _skill_id(request)
    store = _reg(request).store
    skill = store.get_skill(skill_id)
    if skill is None:
        raise NotFound(f"no skill {skill_id}", hint="search with /v1/skills?q=")
    skill["versions"] = store.versions(skill_id)
    return _json(skill)


def list_versions(request: Request) -> Response:
    skill_id = _skill_id(request)
    store = _reg(request).store
    if store.get_skill(skill_id) is None:
        raise NotFound(f"no skill {skill_id}")
    versions = store.versions(skill_id)
    start = _int_param(request, "cursor", 0) if request.query_params.get("cursor") else 0
    limit = max(1, min(_int_param(request, "limit", 100), 100))
    page = versions[start : start + limit]
    more = start + limit < len(versions)
    return _json(
        {
            "versions": page,
            "metadata": {"count": len(page), "nextCursor": str(start + limit) if more else None},
        }
    )


def version_detail(request: Request) -> Response:
    return _json(_reg(request).version_doc(request))


def download(request: Request) -> Response:
    reg = _reg(request)
    doc = reg.version_doc(request)  # yanked versions stay downloadable by exact version
    sha = doc["archiveSha256"]
    etag = f'"{sha}"'
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers={"ETag": etag})
    path = reg.blobs.path(sha)  # None for stores without local files (object storage)
    headers = {
        "ETag": etag,
        "Cache-Control": "public, max-age=31536000, immutable",
        "X-Kiln-Sha256": sha,
        "X-Kiln-Signature": doc["signatures"][0]["signature"],
        "Content-Disposition": f'attachment; filename="{doc["name"]}-{doc["version"]}.tar.gz"',
    }
    large = doc.get("archiveSize", 0) > INLINE_DOWNLOAD_BYTES
    if path is not None and ("range" in request.headers or large):
        return FileResponse(
            path, media_type="application/gzip", headers=headers
        )  # ranges, streaming
    # Small archives (nearly all skills) in one read from the page cache: no thread hops.
    data = path.read_bytes() if path is not None else reg.blobs.get(sha)
    return Response(data, media_type="application/gzip", headers=headers)


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
    since = _int_param(request, "since", 0)
    changes = _reg(request).store.changes(since, _int_param(request, "limit", 100))
    return _json(
        {"changes": changes, "metadata": {"nextSince": changes[-1]["seq"] if changes else since}}
    )


def marketplace(request: Request) -> Response:
    reg = _reg(request)
    return _json(build_marketplace(reg.store, str(request.base_url), name=reg.name))


def whoami(request: Request) -> Response:
    header = request.headers.get("authorization", "")
    token = header.partition(" ")[2].strip()
    namespace = _reg(request).store.token_namespace(token) if token else None
    if namespace is None:
        raise Unauthorized("a valid bearer token is required")
    return _json({"namespace": namespace})


async def publish(request: Request) -> Response:
    reg = _reg(request)
    skill_id = _skill_id(request)
    namespace, _ = check_id(skill_id)
    _authorize(request, namespace)
    body = await _read_body(request, MAX_ARCHIVE_BYTES)
    doc = await run_in_threadpool(
        build_release, skill_id, request.path_params["version"], body, reg.signer
    )
    await run_in_threadpool(reg.blobs.put, body)
    await run_in_threadpool(reg.store.add_version, doc)
    stored = await run_in_threadpool(reg.store.get_version, skill_id, doc["version"])
    return _json(
        stored, status=201, headers={"Location": f"/v1/skills/{skill_id}/versions/{doc['version']}"}
    )


async def set_status(request: Request) -> Response:
    reg = _reg(request)
    skill_id = _skill_id(request)
    _authorize(request, request.path_params["namespace"])
    data = await _read_json(request)
    status = data.get("status")
    if not isinstance(status, str):
        raise ValidationFailed(["'status' must be one of active, deprecated, yanked"])
    doc = await run_in_threadpool(
        reg.store.set_status,
        skill_id,
        request.path_params["version"],
        status,
        str(data.get("reason") or ""),
    )
    return _json(doc)


async def set_deprecation(request: Request) -> Response:
    reg = _reg(request)
    _authorize(request, request.path_params["namespace"])
    data = await _read_json(request)
    message = data.get("message")
    if message is not None and not isinstance(message, str):
        raise ValidationFailed(["'message' must be a string or null"])
    await run_in_threadpool(reg.store.set_deprecation, _skill_id(request), message)
    return _json(reg.store.get_skill(_skill_id(request)))


async def set_dist_tag(request: Request) -> Response:
    reg = _reg(request)
    _authorize(request, request.path_params["namespace"])
    version: str | None = None
    if request.method == "PUT":
        data = await _read_json(request)
        if not isinstance(data.get("version"), str):
            raise ValidationFailed(["'version' must be a string"])
        version = data["version"]
    await run_in_threadpool(
        reg.store.set_dist_tag, _skill_id(request), request.path_params["tag"], version
    )
    skill = reg.store.get_skill(_skill_id(request)) or {}
    return _json({"distTags": skill.get("distTags", {})})


async def on_registry_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RegistryError)
    body: dict[str, Any] = {"error": {"code": exc.code, "message": str(exc), "hint": exc.hint}}
    if isinstance(exc, ValidationFailed):
        body["errors"] = exc.errors
    return _json(body, status=exc.status)


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _json(
        {"error": {"code": "http_error", "message": exc.detail, "hint": ""}}, status=exc.status_code
    )


_SKILL = "/v1/skills/{namespace}/{name}"
_VERSION = _SKILL + "/versions/{version}"


def create_app(data_dir: Path, *, name: str = "kiln-registry") -> Starlette:
    """Build the ASGI app over the embedded stores under ``data_dir`` (created if missing)."""
    store, blobs = open_storage(Path(data_dir))
    return create_app_with(store, blobs, load_or_create_signer(Path(data_dir)), name=name)


def create_app_with(
    store: MetadataStore, blobs: BlobStore, signer: Signer, *, name: str = "kiln-registry"
) -> Starlette:
    routes = [
        Route("/.well-known/kiln-registry.json", _inline(well_known)),
        Route("/v1/skills", _inline(list_skills)),
        Route("/v1/whoami", _inline(whoami)),
        Route("/v1/changes", _inline(change_feed)),
        Route("/v1/marketplace.json", marketplace),
        Route("/.claude-plugin/marketplace.json", marketplace),
        Route(_SKILL, _inline(skill_detail)),
        Route(_SKILL + "/versions", _inline(list_versions)),
        Route(_SKILL + "/deprecation", set_deprecation, methods=["PUT"]),
        Route(_SKILL + "/dist-tags/{tag}", set_dist_tag, methods=["PUT", "DELETE"]),
        Route(_VERSION, _inline(version_detail), methods=["GET"]),
        Route(_VERSION, publish, methods=["PUT", "POST"]),
        Route(_VERSION + "/status", set_status, methods=["PUT"]),
        Route(_VERSION + "/archive", _inline(download)),
        Route(_VERSION + "/tools", _inline(tool_schemas)),
        Route(_VERSION + "/files/{path:path}", file_preview),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={RegistryError: on_registry_error, HTTPException: on_http_error},
    )
    app.state.registry = Registry(store, blobs, signer, name)
    return app
