"""The ``/git/<ns>/<name>.git`` endpoints: a skill's latest release for ``git clone``.

The dumb protocol (``info/refs``, ``HEAD``, loose objects) and the smart protocol's stateless
fetch (ref advertisement, ``git-upload-pack``) over the repository ``gitrepo`` builds; the
served marketplace points Claude Code here. Read-only: there is no receive-pack, and a push
is refused with a 403 whose one ``text/plain`` line git shows the user (``remote: …``); any
other ``?service=`` is refused too, never answered with the dumb protocol's refs (a push then
fell back to WebDAV and failed with nothing to say why).
"""

from __future__ import annotations

import re
import zlib

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from skills_registry.registry.errors import NotFound, TooLarge, UsageError
from skills_registry.registry.gitrepo import GitRepo
from skills_registry.registry.http import MAX_JSON_BYTES, read_body, registry_of

_LOOSE = re.compile(r"objects/([0-9a-f]{2})/([0-9a-f]{38})")


def _git_repo(request: Request) -> tuple[str, GitRepo]:
    repo_name = request.path_params["repo"]
    if not repo_name.endswith(".git"):
        raise NotFound("git repositories are at /git/{namespace}/{name}.git")
    skill_id = f"{request.path_params['namespace']}/{repo_name[:-4]}"
    return repo_name, registry_of(request).latest_repo(skill_id)


async def git_upload_pack(request: Request) -> Response:
    """The smart protocol's fetch (``git clone --depth 1`` needs it), read-only."""
    _, repo = _git_repo(request)
    body = await read_body(request, MAX_JSON_BYTES)
    if request.headers.get("content-encoding") == "gzip":  # git compresses large requests
        body = _gunzip(body, MAX_JSON_BYTES * 4)
    try:
        answer = await run_in_threadpool(repo.upload_pack, body)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return Response(answer, media_type="application/x-git-upload-pack-result")


def _gunzip(body: bytes, cap: int) -> bytes:
    """Decompress at most ``cap`` bytes: 64 KB of gzip can hold 64 MB of zeros, and an
    unauthenticated request must not make the server allocate them."""
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflate.decompress(body, cap + 1)
    except zlib.error:
        raise UsageError("request body is not valid gzip") from None
    if len(out) > cap:
        raise TooLarge(f"request body expands past {cap} bytes")
    return out


READ_ONLY = (
    "this registry's git repositories are read-only: publish a new version with "
    "`kiln skills publish PATH --version X`\n"
)


def git_refused(request: Request) -> Response:
    """``git push``: the ref discovery for ``git-receive-pack``, or the pack it would send.
    Plain text, not the API's JSON error: git shows a ``text/plain`` error body and nothing
    else (``remote: …`` before its own ``… returned error: 403``). Whatever the repository:
    no push is taken, so none is looked up (a lookup unpacks the latest archive)."""
    return Response(READ_ONLY, status_code=403, media_type="text/plain; charset=utf-8")


def git_files(request: Request) -> Response:
    """``git clone BASE/git/NS/NAME.git``: refs, HEAD and loose objects (dumb), or the smart
    protocol's ref advertisement."""
    rest = request.path_params["rest"]
    service = request.query_params.get("service")
    if rest == "info/refs" and service is not None and service != "git-upload-pack":
        if service == "git-receive-pack":
            return git_refused(request)
        unknown = (
            f"unsupported git service {service[:60]!r}: this registry serves git-upload-pack\n"
        )
        return Response(unknown, status_code=403, media_type="text/plain; charset=utf-8")
    repo_name, repo = _git_repo(request)
    text = "text/plain; charset=utf-8"
    if rest == "info/refs" and service == "git-upload-pack":
        return Response(
            repo.advertisement(),
            media_type="application/x-git-upload-pack-advertisement",
            headers={"Cache-Control": "no-cache"},
        )
    if rest == "info/refs":
        return Response(repo.info_refs(), media_type=text)
    if rest == "HEAD":
        return Response(b"ref: refs/heads/main\n", media_type=text)
    if rest == "objects/info/packs":
        return Response(b"\n", media_type=text)
    match = _LOOSE.fullmatch(rest)
    data = repo.loose(match[1] + match[2]) if match else None
    if data is None:
        raise NotFound(f"no {rest} in {repo_name}")
    return Response(data, media_type="application/x-git-loose-object")
