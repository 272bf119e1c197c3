"""Where the registry client may follow a download's redirect, and where its token may go:
registry text shown on one terminal line (``printable``), a URL's origin, the redirect rules."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from skills_registry.registry.errors import BadResponse

if TYPE_CHECKING:  # imported where a request is made (client_answers)
    import httpx

REDIRECTS = (301, 302, 303, 307, 308)


def printable(text: str, limit: int = 300) -> str:
    """Registry-supplied text for one terminal line: controls escaped, cut short."""
    out = "".join(c if c.isprintable() else json.dumps(c)[1:-1] for c in text)
    return out if len(out) <= limit else out[: limit - 1] + "…"


def origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return (url.scheme, url.host, url.port)


def redirect_target(registry: str, current: httpx.URL, location: str) -> httpx.URL:
    """Where a download redirect points, if a client may follow it."""
    if not location:
        raise BadResponse(f"registry {registry} sent a redirect without a Location")
    import httpx  # loaded already: ``current`` is an httpx URL

    try:
        target = current.join(location)
    except httpx.InvalidURL:
        raise BadResponse(f"registry {registry} redirected to an invalid URL") from None
    if target.scheme not in ("http", "https") or not target.host:
        raise BadResponse(
            f"registry {registry} redirected the download to {printable(str(target), 120)} "
            "(only http and https are followed)"
        )
    if current.scheme == "https" and target.scheme == "http":
        raise BadResponse(
            f"registry {registry} redirected the download from https to plain http "
            f"({printable(str(target), 120)})"
        )
    return target
