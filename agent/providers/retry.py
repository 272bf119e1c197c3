"""The one retry policy every provider shares: exponential backoff with jitter on rate limits,
server errors and dropped connections, honouring ``retry-after``, and never after output has
reached the caller (a half-streamed reply cannot be un-shown, so it becomes a partial error the
loop can save instead).

The SDKs' own retries are switched off (``max_retries=0``) so this module is the only place
that decides when to try again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from agent.errors import ProviderError
from agent.types import Message, ModelReply, StreamItem, TextDelta, text_block

log = logging.getLogger("kiln.providers")

E = TypeVar("E", bound=ProviderError)


class PartialReplyError(ProviderError):
    """The stream broke after text reached the caller; carries what was said so far.

    ``partial`` is the duck-typed flag the loop checks (``getattr(exc, "partial", False)``);
    ``partial_message`` is an assistant message it can append to the transcript as-is.
    """

    partial = True
    retryable = False

    def __init__(self, message: str, *, text: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.partial_text = text
        self.partial_message: Message = {
            "role": "assistant",
            "content": [text_block(text)] if text else [],
        }


def provider_error(
    cls: type[E],
    message: str,
    *,
    hint: str = "",
    retry_after: float | None = None,
    status: int | None = None,
) -> E:
    """Build an ``agent.errors`` exception with the extra facts the retry loop reads."""
    exc = cls(message, hint=hint or None)
    exc.retry_after = retry_after  # type: ignore[attr-defined]
    exc.status = status  # type: ignore[attr-defined]
    return exc


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (numeric form only)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except (TypeError, ValueError):
            continue
        if value >= 0:
            return value
    return None


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 20.0
    jitter: float = 0.25  # +/- fraction of the computed delay
    max_retry_after: float = 60.0  # a server asking for longer than this is obeyed only this far
    # How to wait; tests pass a recorder to see the delays without spending them.
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Wait before attempt ``attempt + 1``; the server's ``retry-after`` wins when given."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        base = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return max(0.0, base * (1 + random.uniform(-self.jitter, self.jitter)))


NO_RETRY = RetryPolicy(max_attempts=1)


async def retrying_stream(
    open_stream: Callable[[], AsyncGenerator[StreamItem, None]],
    *,
    policy: RetryPolicy,
    provider: str,
) -> AsyncIterator[StreamItem]:
    """Run ``open_stream`` until it finishes, retrying retryable errors raised before any output.

    Once a ``TextDelta`` or ``ToolCallDelta`` has been yielded, a failure is final and becomes a
    ``PartialReplyError`` holding the text streamed so far.
    """
    attempt = 0
    while True:
        attempt += 1
        said: list[str] = []
        streamed = False
        try:
            # aclosing: a caller that stops early (or is cancelled) closes the HTTP stream now,
            # not whenever the garbage collector gets to it.
            async with contextlib.aclosing(open_stream()) as items:
                async for item in items:
                    if isinstance(item, TextDelta):
                        said.append(item.text)
                    if not isinstance(item, ModelReply):
                        streamed = True
                    yield item
            return
        except PartialReplyError:
            raise
        except ProviderError as exc:
            if streamed:
                text = "".join(said)
                raise PartialReplyError(
                    f"{provider}: the reply broke off after {len(text)} characters ({exc})",
                    text=text,
                    hint="the partial reply was kept; ask again to continue",
                ) from exc
            if not exc.retryable or attempt >= policy.max_attempts:
                if exc.retryable and attempt > 1:
                    exc.args = (f"{exc} (gave up after {attempt} attempts)",)
                raise
            wait = policy.delay(attempt, getattr(exc, "retry_after", None))
            log.warning(
                "%s; retry %d/%d in %.2fs",
                exc,
                attempt,
                policy.max_attempts - 1,
                wait,
            )
            await policy.sleep(wait)


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
    from agent.errors import ProviderUnavailable, RateLimited, ServerError

    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        response = getattr(exc, "response", None)
        message = _api_message(exc)
        retry_after = parse_retry_after(getattr(response, "headers", None))
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
            ProviderUnavailable, f"{provider}: cannot connect to {where} ({chain[-1]})", hint=fix
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
