"""The one retry policy every provider shares: exponential backoff with jitter on rate limits,
server errors (5xx, and the 408 and 409 the SDKs' own policies retry) and dropped connections,
honouring ``retry-after`` and the rate-limit reset headers (a ``retry-after`` longer than the
policy waits ends the retries at once), and never after output has reached the caller (a
half-streamed reply cannot be un-shown, so it becomes a partial error the loop can save instead).

The SDKs' own retries are switched off (``max_retries=0``) so this module is the only place
that decides when to try again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import email.utils
import logging
import random
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from agent.errors import ProviderError
from agent.types import (
    Message,
    ModelReply,
    StreamItem,
    TextDelta,
    ToolCallDelta,
    Usage,
    text_block,
)

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


_RESET_HEADERS = (
    # OpenAI (and compatible proxies): durations such as "1s", "6m0s", "20ms".
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    # Anthropic: RFC 3339 times.
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-reset",
)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_retry_after(
    headers: Any, *, rate_limited: bool = False, now: float | None = None
) -> float | None:
    """Seconds to wait: ``retry-after-ms``, else ``retry-after`` (seconds or an HTTP date),
    else, on a 429 (``rate_limited``), the latest of the rate-limit reset headers (OpenAI sends
    them on every reply, so on a 5xx they say nothing about when to retry). ``None`` when the
    server said nothing."""
    if headers is None:
        return None
    now = time.time() if now is None else now
    raw = headers.get("retry-after-ms")
    if raw is not None and (value := _number(raw)) is not None:
        return value / 1000
    raw = headers.get("retry-after")
    if raw is not None:
        value = _number(raw)
        if value is None:
            value = _until(_http_date(raw), now)
        if value is not None:
            return value
    if not rate_limited:
        return None
    resets = [_reset(headers.get(name), now) for name in _RESET_HEADERS]
    known = [r for r in resets if r is not None]
    return max(known) if known else None


def _number(raw: str) -> float | None:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _http_date(raw: str) -> float | None:
    try:
        return email.utils.parsedate_to_datetime(raw).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def _until(when: float | None, now: float) -> float | None:
    return None if when is None else max(0.0, when - now)


def _reset(raw: str | None, now: float) -> float | None:
    """A reset header's wait: a duration ("1m30s", "250ms", "2"), or an RFC 3339 time."""
    if not raw:
        return None
    raw = raw.strip()
    if (value := _number(raw)) is not None:
        return value
    if re.fullmatch(r"(?:\d+(?:\.\d+)?(?:ms|h|m|s))+", raw):
        return sum(float(n) * _UNIT[u] for n, u in _DURATION.findall(raw))
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return _until(when.timestamp(), now)


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
    before_retry: Callable[[Usage], None] | None = None,
) -> AsyncIterator[StreamItem]:
    """Run ``open_stream`` until it finishes, retrying retryable errors raised before any output.

    Once a ``TextDelta`` or ``ToolCallDelta`` has been yielded, a failure is final and becomes a
    ``PartialReplyError`` holding the text streamed so far. Before trying again after attempts
    that were billed, ``before_retry`` (the request's) is given their usage, and may raise.
    """
    attempt = 0
    spent = Usage()  # reported by attempts that then failed: billed, so counted
    while True:
        attempt += 1
        said: list[str] = []
        calls = 0  # tool calls announced: never run from a broken reply
        streamed = False
        try:
            # aclosing: a caller that stops early (or is cancelled) closes the HTTP stream now,
            # not whenever the garbage collector gets to it.
            async with contextlib.aclosing(open_stream()) as items:
                async for item in items:
                    if isinstance(item, TextDelta):
                        said.append(item.text)
                    elif isinstance(item, ToolCallDelta):
                        calls += 1
                    if not isinstance(item, ModelReply):
                        streamed = True
                    elif spent != Usage():
                        item = dataclasses.replace(item, discarded=item.discarded + spent)
                    yield item
            return
        except PartialReplyError:
            raise
        except ProviderError as exc:
            spent = spent + (getattr(exc, "usage", None) or Usage())
            exc.usage = spent  # type: ignore[attr-defined]
            if streamed:
                text = "".join(said)
                partial = PartialReplyError(
                    f"{provider}: the reply broke off after {len(text)} characters"
                    + (f" and {calls} unfinished tool call(s), not run" if calls else "")
                    + f" ({exc})",
                    text=text,
                    hint="the partial reply was kept; ask again to continue",
                )
                partial.usage = spent  # type: ignore[attr-defined]
                raise partial from exc
            asked = getattr(exc, "asked_wait", None)
            if exc.retryable and asked is not None and asked > policy.max_retry_after:
                # Asking again sooner than the server said is refused again: say it now.
                exc.args = (f"{exc} (the provider asks to wait {asked:.0f} s; not retried)",)
                raise
            if not exc.retryable or attempt >= policy.max_attempts:
                if exc.retryable and attempt > 1:
                    exc.args = (f"{exc} (gave up after {attempt} attempts)",)
                raise
            if before_retry is not None and spent != Usage():
                before_retry(spent)  # a cost limit another attempt could cross: it raises
            wait = policy.delay(attempt, getattr(exc, "retry_after", None))
            log.warning(
                "%s; retry %d/%d in %.2fs",
                exc,
                attempt,
                policy.max_attempts - 1,
                wait,
            )
            await policy.sleep(wait)
