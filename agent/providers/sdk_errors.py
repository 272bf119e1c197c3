"""SDK exceptions to Kiln's errors table, for both the anthropic and openai SDKs.

Both SDKs share a shape (``APIStatusError`` with ``status_code``/``response``/``body``,
``APIConnectionError`` wrapping a transport error), but vendor different httpx packages
(``httpx`` and ``httpx2``), so transport errors are recognised by class name, not by type.
"""

from __future__ import annotations

import errno
import socket

from agent.errors import ProviderError, ProviderUnavailable, RateLimited, ServerError
from agent.providers.retry import parse_retry_after, provider_error


def _mro_names(exc: BaseException) -> set[str]:
    return {c.__name__ for c in type(exc).__mro__}


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in chain:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    return chain


def is_transport_error(exc: BaseException) -> bool:
    """An httpx (or httpx2) transport failure, matched by class name: the SDKs vendor different
    httpx packages, and both keep the same exception hierarchy."""
    return "TransportError" in _mro_names(exc)


def classify_sdk_error(
    exc: BaseException, *, provider: str, key_var: str, base_var: str, base_url: str | None
) -> ProviderError:
    """Turn an SDK (anthropic/openai) or transport exception into an ``agent.errors`` type.

    Both SDKs share the shape: ``APIStatusError`` with ``status_code``/``response``/``message``,
    ``APIConnectionError`` wrapping the transport error, ``APITimeoutError`` beneath it.
    """
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        response = getattr(exc, "response", None)
        message = _api_message(exc)
        headers = getattr(response, "headers", None)
        retry_after = parse_retry_after(headers, rate_limited=status == 429)
        text = f"{provider}: HTTP {status}: {message}"
        if status == 429:
            return provider_error(
                RateLimited,
                text,
                hint="rate limited; wait a minute or lower the request rate",
                retry_after=retry_after,
                status=status,
            )
        if status >= 500 or _is_overloaded(exc):
            return provider_error(
                ServerError,
                text,
                hint="the provider had a problem; retry later",
                retry_after=retry_after,
                status=status,
            )
        if status in (401, 403):
            return provider_error(
                ProviderError, text, hint=f"check {key_var}: the key was refused", status=status
            )
        return provider_error(
            ProviderError, text, hint="the provider rejected the request", status=status
        )
    chain = _causes(exc)
    where = base_url or "the default endpoint"
    if any({"ConnectError", "ConnectTimeout"} & _mro_names(e) for e in chain):
        fix = (
            f"start the server at {base_url} or fix {base_var}"
            if base_url
            else "check your network connection"
        )
        return provider_error(
            ProviderUnavailable, f"{provider}: cannot connect to {where} ({_why(chain)})", hint=fix
        )
    if any("Timeout" in type(e).__name__ for e in chain):
        return provider_error(
            ServerError, f"{provider}: request to {where} timed out", hint="retry later"
        )
    if any(is_transport_error(e) for e in chain) or "APIConnectionError" in _mro_names(exc):
        return provider_error(
            ServerError, f"{provider}: connection to {where} dropped ({chain[-1]})", hint="retry"
        )
    return provider_error(
        ProviderError,
        f"{provider}: {type(exc).__name__}: {exc}",
        hint="unexpected error from the provider SDK",
    )


def _why(chain: list[BaseException]) -> str:
    """The root cause in a few words: refused, unknown host, or the OS's own message."""
    for exc in reversed(chain):
        if isinstance(exc, socket.gaierror):
            return "host name not found"
        if (
            isinstance(exc, ConnectionRefusedError)
            or getattr(exc, "errno", None) == errno.ECONNREFUSED
        ):
            return "connection refused"
        if isinstance(exc, OSError) and exc.strerror:
            return exc.strerror.lower()
    return str(chain[-1]) or type(chain[-1]).__name__


def _api_message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if body.get("message"):
            return str(body["message"])
    return str(getattr(exc, "message", "") or exc)


def _is_overloaded(exc: BaseException) -> bool:
    """Anthropic sends ``overloaded_error`` as an SSE ``error`` event on a 200 stream."""
    body = getattr(exc, "body", None)
    err = body.get("error") if isinstance(body, dict) else None
    return isinstance(err, dict) and err.get("type") in ("overloaded_error", "api_error")
