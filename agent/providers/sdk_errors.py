"""SDK exceptions to Kiln's errors table, for both the anthropic and openai SDKs.

Both SDKs share a shape (``APIStatusError`` with ``status_code``/``response``/``body``,
``APIConnectionError`` wrapping a transport error), but vendor different httpx packages
(``httpx`` and ``httpx2``), so transport errors are recognised by class name, not by type.
"""

from __future__ import annotations

import errno
import re
import socket
from typing import Any

from agent.errors import (
    ContextTooLong,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
    ServerError,
)
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
    ``APIConnectionError`` wrapping the transport error, ``APITimeoutError`` beneath it. A reply's
    ``x-should-retry`` header decides whether it is retried, as it does in the SDKs.
    """
    error = _classify(exc, provider=provider, key_var=key_var, base_var=base_var, base_url=base_url)
    headers = getattr(getattr(exc, "response", None), "headers", None)
    should = str(headers.get("x-should-retry", "") if headers is not None else "").lower()
    if should in ("true", "false"):
        error.retryable = should == "true"
    return error


def _classify(
    exc: BaseException, *, provider: str, key_var: str, base_var: str, base_url: str | None
) -> ProviderError:
    status = getattr(exc, "status_code", None)
    label = f"HTTP {status}"
    if not isinstance(status, int) and _is_stream_error(exc):
        status = _stream_error_code(exc)
        label = f"error event in the stream ({status})"
    elif isinstance(status, int) and status < 300:
        # Anthropic's ``error`` event inside a 200 stream: its type says what the status would be.
        kind = str(_error_body(exc).get("type", ""))
        status, label = _ANTHROPIC_TYPES.get(kind, 500), f"error event in the stream ({kind})"
    if isinstance(status, int):
        response = getattr(exc, "response", None)
        message = _api_message(exc)
        headers = getattr(response, "headers", None)
        retry_after = parse_retry_after(headers, rate_limited=status == 429)
        asked = parse_retry_after(headers)  # said outright, not read off a reset time
        text = f"{provider}: {label}: {message}"
        if status == 429 and _is_out_of_quota(exc):
            return provider_error(
                ProviderError,
                text,
                hint=f"the account behind {key_var} has no quota left: check its plan and "
                "billing (waiting will not help)",
                status=status,
            )
        if status == 429:
            limited = provider_error(
                RateLimited,
                text,
                hint="rate limited; wait a minute or lower the request rate",
                retry_after=retry_after,
                status=status,
            )
            limited.asked_wait = asked  # type: ignore[attr-defined]
            return limited
        if status >= 500 or status in _RETRIED or _is_overloaded(exc):
            failed = provider_error(
                ServerError,
                text,
                hint=_RETRIED.get(status, "the provider had a problem; retry later"),
                retry_after=retry_after,
                status=status,
            )
            failed.asked_wait = asked  # type: ignore[attr-defined]
            return failed
        if status in (400, 413, 422) and _is_context_overflow(exc, message):
            too_long = provider_error(
                ContextTooLong,
                text,
                hint="the conversation no longer fits the model's context window: start a new "
                "session, or give the server a larger context (llama.cpp -c, Ollama num_ctx)",
                status=status,
            )
            too_long.window = _named_window(exc, message)
            return too_long
        if status == 404:
            where = f"{base_var} ({base_url})" if base_url else base_var
            # The SDKs add the path: openai's base ends in /v1, anthropic's does not.
            path = "ends in /v1" if provider == "openai" else "does not end in /v1"
            return provider_error(
                ProviderError,
                text,
                hint=f"check the model name (KILN_MODEL or --model) and {where}, which usually "
                f"{path}",
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


# Statuses under 500 that both SDKs' own ``_should_retry`` retries (as well as 429 and 5xx) when
# the reply has no ``x-should-retry``: a request timeout and a lock timeout.
_RETRIED = {
    408: "the provider timed out reading the request; retry later",
    409: "the provider met a conflicting request (a lock timeout); retry later",
}

_ANTHROPIC_TYPES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def _is_out_of_quota(exc: BaseException) -> bool:
    """OpenAI answers 429 ``insufficient_quota`` when the account is out of credit: not a rate
    limit, so retrying only repeats it."""
    err = _error_body(exc)
    return "insufficient_quota" in f"{err.get('code', '')} {err.get('type', '')}"


def _is_stream_error(exc: BaseException) -> bool:
    """An ``error`` object sent inside a 200 stream (OpenRouter, vLLM, LiteLLM do this when
    the upstream fails mid-reply); the openai SDK raises it as a bare ``APIError``."""
    names = _mro_names(exc)
    return "APIError" in names and "APIConnectionError" not in names and bool(_error_body(exc))


def _stream_error_code(exc: BaseException) -> int:
    """The HTTP-like code the event carries (``code``, or ``status``), else 500: an upstream
    failure the server could only report after it had said 200."""
    err = _error_body(exc)
    for key in ("code", "status", "status_code"):
        value = err.get(key)
        numeric = isinstance(value, int) or (isinstance(value, str) and value.isdigit())
        if numeric and 400 <= int(value) < 600:  # type: ignore[arg-type]
            return int(value)  # type: ignore[arg-type]
    return 500


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


_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|prompt is too long|"
    r"exceeds? (?:the )?(?:available )?context|context (?:size|window|limit)|input is too long|"
    r"too many (?:input )?tokens",
    re.IGNORECASE,
)
_WINDOW = re.compile(
    r"maximum context length is (\d+)|> ?(\d+) maximum|context (?:size|window|length) "
    r"(?:is |of )?\(?(\d+)|\d+ \+ \d+ > (\d+)",
    re.IGNORECASE,
)


def _error_body(exc: BaseException) -> dict[str, Any]:
    body = getattr(exc, "body", None)
    err = body.get("error", body) if isinstance(body, dict) else None
    return err if isinstance(err, dict) else {}


def _is_context_overflow(exc: BaseException, message: str) -> bool:
    """OpenAI's ``context_length_exceeded`` code, or the words OpenAI, Anthropic, vLLM,
    llama.cpp (``exceed_context_size_error``) and LiteLLM use for it."""
    err = _error_body(exc)
    codes = f"{err.get('code', '')} {err.get('type', '')}"
    return "context" in codes.lower() or bool(_OVERFLOW.search(message))


def _named_window(exc: BaseException, message: str) -> int | None:
    """The window size the server named: llama.cpp's ``n_ctx`` field, or the number in
    "maximum context length is N" (OpenAI, vLLM), "N tokens > M maximum" (Anthropic) or
    "P + T > W" (Anthropic, when the prompt fits but not with ``max_tokens`` beside it)."""
    n_ctx = _error_body(exc).get("n_ctx")
    if isinstance(n_ctx, int) and n_ctx > 0:
        return n_ctx
    match = _WINDOW.search(message)
    return int(next(g for g in match.groups() if g)) if match else None


def _is_overloaded(exc: BaseException) -> bool:
    """Anthropic sends ``overloaded_error`` as an SSE ``error`` event on a 200 stream."""
    body = getattr(exc, "body", None)
    err = body.get("error") if isinstance(body, dict) else None
    return isinstance(err, dict) and err.get("type") in ("overloaded_error", "api_error")
