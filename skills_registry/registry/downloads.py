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
from starlette.responses import FileResponse, RedirectResponse, Response, StreamingResponse

INLINE_DOWNLOAD_BYTES = 256 * 1024
_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


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


def _byte_range(header: str, size: int) -> tuple[int, int] | None:
    """One ``bytes=a-b`` range clipped to ``size``; None when unsatisfiable or malformed."""
    match = _RANGE.match(header.strip())
    if match is None or (not match[1] and not match[2]):
        return None
    if not match[1]:  # suffix: the last N bytes
        length = int(match[2])
        return (max(0, size - length), size - 1) if length else None
    start = int(match[1])
    end = min(int(match[2]), size - 1) if match[2] else size - 1
    return (start, end) if start <= end else None


async def serve_archive(reg: Any, request: Request, doc: dict[str, Any]) -> Response:
    sha = doc["archiveSha256"]
    headers = _headers(doc)
    if _not_modified(request.headers.get("if-none-match", ""), headers["ETag"]):
        return Response(status_code=304, headers={"ETag": headers["ETag"]})
    path = reg.blobs.path(sha)
    if path is not None:
        reg.metrics.downloads.labels("local").inc()
        if "range" in request.headers or doc.get("archiveSize", 0) > INLINE_DOWNLOAD_BYTES:
            return FileResponse(path, media_type="application/gzip", headers=headers)
        # Small archives (nearly all skills) in one read from the page cache: no thread hops.
        return Response(path.read_bytes(), media_type="application/gzip", headers=headers)
    if reg.redirect_downloads:
        url = reg.blobs.presigned_url(sha, f"{doc['name']}-{doc['version']}.tar.gz")
        if url:
            reg.metrics.downloads.labels("redirect").inc()
            return RedirectResponse(url, status_code=302, headers=headers)
    reg.metrics.downloads.labels("stream").inc()
    size = int(doc["archiveSize"])
    wanted = request.headers.get("range")
    if wanted is not None:
        span = _byte_range(wanted, size)
        if span is None:
            return Response(
                status_code=416, headers={**headers, "Content-Range": f"bytes */{size}"}
            )
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
