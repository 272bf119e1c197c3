"""Serving archives from whichever blob store holds them, with ``ETag`` and ``Range`` kept.

A folder store is read from the page cache (small archives) or streamed by ``FileResponse``
(ranges, large files). Object storage is streamed through the instance, or, with
``--redirect-downloads``, answered by a 302 to a presigned URL so the bucket (or a CDN in front
of it) carries the bytes. Either way the integrity headers come from the signed version document,
never from the store, so a client verifies what it got whatever served it.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

INLINE_DOWNLOAD_BYTES = 256 * 1024
_RANGE = re.compile(r"bytes=(\d*)-(\d*)", re.IGNORECASE)


def _headers(doc: dict[str, Any]) -> dict[str, str]:
    sha = doc["archiveSha256"]
    return {
        "ETag": f'"{sha}"',
        "Cache-Control": "public, max-age=31536000, immutable",
        "X-Kiln-Sha256": sha,
        "X-Kiln-Signature": doc["signatures"][0]["signature"],
        "Content-Disposition": f'attachment; filename="{doc["name"]}-{doc["version"]}.tar.gz"',
        "Accept-Ranges": "bytes",
    }


UNSATISFIABLE = (-1, -1)


def _byte_range(header: str, size: int) -> tuple[int, int] | None:
    """One ``bytes=a-b`` range clipped to ``size``; ``UNSATISFIABLE`` past the end; None for a
    header to ignore (RFC 9110: another unit must be ignored, an invalid range may be; several
    ranges are ignored too, as a client verifying a sha256 never asks for them)."""
    match = _RANGE.fullmatch(header.strip())
    if match is None or (not match[1] and not match[2]):
        return None
    if not match[1]:  # suffix: the last N bytes
        length = _bound(match[2])
        return (max(0, size - length), size - 1) if length and size else UNSATISFIABLE
    start = _bound(match[1])
    if match[2] and _bound(match[2]) < start:
        return None
    if start >= size:
        return UNSATISFIABLE
    return (start, min(_bound(match[2]), size - 1) if match[2] else size - 1)


def _bound(digits: str) -> int:
    """A range bound as a number; one too long to be an offset into any archive reads as
    ``HUGE`` (Python reads no integer past 4,300 digits, and a header may hold 16 KB)."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) < 19 else HUGE


HUGE = 2**63  # past the end of any archive


def _unsatisfiable(size: int, headers: dict[str, str]) -> Response:
    error = {
        "code": "range_not_satisfiable",
        "message": f"the range is past the end of the {size}-byte archive",
        "hint": "",
    }
    headers = {**headers, "Content-Range": f"bytes */{size}"}
    return JSONResponse({"error": error}, status_code=416, headers=headers)


async def serve_archive(reg: Any, request: Request, doc: dict[str, Any]) -> Response:
    sha = doc["archiveSha256"]
    headers = _headers(doc)
    if _not_modified(request.headers.get("if-none-match", ""), headers["ETag"]):
        return Response(status_code=304, headers={"ETag": headers["ETag"]})
    path = reg.blobs.path(sha)
    size = int(doc.get("archiveSize") or (path.stat().st_size if path is not None else 0))
    wanted = request.headers.get("range")
    span = _byte_range(wanted, size) if wanted is not None else None
    if span == UNSATISFIABLE:
        return _unsatisfiable(size, headers)
    if wanted is not None:  # FileResponse reads the range again: it sees only the one decided
        # here (it would refuse a suffix longer than the file, and a bound of 5,000 digits)
        kept = [(k, v) for k, v in request.scope["headers"] if k != b"range"]
        if span is not None:
            kept.append((b"range", f"bytes={span[0]}-{span[1]}".encode()))
        request.scope["headers"] = kept
    if path is not None:
        reg.metrics.downloads.labels("local").inc()
        if span is not None or size > INLINE_DOWNLOAD_BYTES:
            return FileResponse(path, media_type="application/gzip", headers=headers)
        # Small archives (nearly all skills) in one read from the page cache: no thread hops.
        return Response(path.read_bytes(), media_type="application/gzip", headers=headers)
    if reg.redirect_downloads:
        url = reg.blobs.presigned_url(sha, f"{doc['name']}-{doc['version']}.tar.gz")
        if url:
            reg.metrics.downloads.labels("redirect").inc()
            return RedirectResponse(url, status_code=302, headers=headers)
    reg.metrics.downloads.labels("stream").inc()
    if span is not None:
        start, end = span
        headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        headers["Content-Length"] = str(end - start + 1)
        return StreamingResponse(
            reg.blobs.stream(sha, start, end),
            status_code=206,
            media_type="application/gzip",
            headers=headers,
        )
    if size <= INLINE_DOWNLOAD_BYTES:
        data = await run_in_threadpool(reg.blobs.get, sha)
        return Response(data, media_type="application/gzip", headers=headers)
    headers["Content-Length"] = str(size)
    return StreamingResponse(reg.blobs.stream(sha), media_type="application/gzip", headers=headers)


def _not_modified(header: str, etag: str) -> bool:
    """``If-None-Match`` as HTTP defines it: a list of tags (weak ones compare too) or ``*``."""
    tags = {t.strip().removeprefix("W/") for t in header.split(",")}
    return "*" in tags or etag in tags
