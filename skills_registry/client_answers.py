"""How the registry client reads one answer: whole under a byte cap, never inflated, and a
failed one turned into a ``RegistryError`` of one line.

A registry, or a proxy in front of it, chooses every byte of its answers: a body past the cap
is cut off while it streams (not after it filled the memory), a ``Content-Encoding`` is refused
(httpx would inflate each layer of ``gzip, gzip`` before a cap saw a byte), and the message and
hint of an error are printable text before anyone prints them. ``RegistryClient`` (``client``)
makes the requests; these functions read what came back.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from skills_registry import json_limits
from skills_registry.redirects import printable
from skills_registry.registry.errors import (
    BadResponse,
    Conflict,
    Forbidden,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RegistryError,
    RegistryUnavailable,
    TooLarge,
    Unauthorized,
    UsageError,
    ValidationFailed,
)

if TYPE_CHECKING:
    # Not imported at module level: `import httpx` also imports its command-line client
    # (click, rich, pygments; ~0.05 s) whenever they are installed, as they are with Kiln, and
    # commands that make no request (skills list, validate, remove; registry audit) need none.
    import httpx

_BY_STATUS: dict[int, type[RegistryError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
}


def read_capped(response: httpx.Response, cap: int, as_sent: bool, base_url: str) -> httpx.Response:
    """The answer read whole under ``cap`` bytes, as a response without its encoding; an
    encoded one only ``as_sent`` (an archive, checked against its signed sha256)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise BadResponse(
            f"registry {base_url} sent {declared} bytes for {response.request.url.path}; "
            f"the limit is {cap}"
        )
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity") and not as_sent:
        raise BadResponse(
            f"registry {base_url} answered {response.request.url.path} with "
            f"Content-Encoding {printable(encoding, 40)!r}; Kiln reads uncompressed "
            "answers only"
        )
    chunks, total = [], 0
    # Unencoded, decoding is the identity; encoded (an archive only), take it raw.
    plain = encoding in ("", "identity")
    for chunk in response.iter_bytes() if plain else response.iter_raw():
        total += len(chunk)
        if total > cap:
            raise BadResponse(
                f"registry {base_url} sent more than {cap} bytes for {response.request.url.path}"
            )
        chunks.append(chunk)
    import httpx  # loaded already: a request was made

    return httpx.Response(  # without the encoding: httpx would inflate ``content`` again
        response.status_code,
        headers=[(k, v) for k, v in response.headers.items() if k != "content-encoding"],
        content=b"".join(chunks),
        request=response.request,
    )


def raise_for(response: httpx.Response, base_url: str) -> httpx.Response:
    """``response`` if it succeeded, else its error as a ``RegistryError`` of one line."""
    if response.status_code < 300:
        return response
    if response.status_code < 400:
        raise BadResponse(
            f"registry {base_url} answered {response.request.url.path} with a redirect "
            f"({response.status_code}); only archive downloads may be redirected"
        )
    try:
        body = response.json()
        error = body.get("error", {})
        message, hint = (
            printable(str(error.get("message") or response.reason_phrase)),
            printable(str(error.get("hint") or "")),
        )
    except (ValueError, AttributeError, RecursionError):
        body, message, hint = {}, f"HTTP {response.status_code} {response.reason_phrase}", ""
    if response.status_code == 422:
        errors = body.get("errors") if isinstance(body, dict) else None
        listed = errors if isinstance(errors, list) else [message]
        raise ValidationFailed([printable(str(e)) for e in listed], hint=hint or None)
    if response.status_code >= 500:
        raise RegistryUnavailable(f"registry {base_url} failed: {message}")
    if response.status_code == 429:
        raise RateLimited.answered(message, response.headers.get("retry-after", ""))
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("code") == "quota_exceeded":
        raise QuotaExceeded(
            message, quota="", usage=0, limit=0, status=response.status_code, hint=hint or None
        )
    cls = _BY_STATUS.get(response.status_code, UsageError)
    raise cls(message, hint=hint or None)


def json_object(response: httpx.Response, base_url: str) -> dict[str, Any]:
    """The body as a JSON object, or ``BadResponse`` (never a parser's traceback)."""
    try:
        data = json.loads(response.content)
    except (ValueError, RecursionError):
        data = None
    if json_limits.lone_surrogate(data) is not None:  # no canonical form: nothing verifies
        data = None
    if not isinstance(data, dict):
        raise BadResponse(
            f"registry {base_url} answered {response.request.url.path} with "
            "something other than a JSON object"
        )
    return data
