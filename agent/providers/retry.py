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
