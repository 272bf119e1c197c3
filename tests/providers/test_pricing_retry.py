"""Price table lookups and the retry policy's arithmetic."""

from __future__ import annotations

import pytest

from agent.errors import ServerError
from agent.providers.pricing import cost_usd, price_for, price_note
from agent.providers.retry import RetryPolicy, parse_retry_after, provider_error, retrying_stream
from agent.types import ModelReply, TextDelta, Usage


def test_cost_uses_all_four_token_kinds() -> None:
    usage = Usage(
        input_tokens=1_000_000,
        cache_read_tokens=1_000_000,
        cache_write_tokens=1_000_000,
        output_tokens=1_000_000,
    )
    assert cost_usd("claude-sonnet-4-5-20250929", usage) == pytest.approx(3 + 0.3 + 3.75 + 15)
    assert cost_usd("gpt-4.1-mini", Usage(input_tokens=2_000_000)) == pytest.approx(
        0.8
    )  # longest prefix wins over gpt-4.1
    assert price_note("gpt-4.1") == ""


def test_unknown_model_costs_nothing_and_says_so() -> None:
    assert price_for("mystery-7b") is None
    assert cost_usd("mystery-7b", Usage(input_tokens=10**9)) == 0.0
    assert "mystery-7b" in price_note("mystery-7b")


def test_retry_after_headers() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    later = "Wed, 21 Oct 2015 07:28:30 GMT"
    assert parse_retry_after({"retry-after": later}, now=1445412480.0) == 30.0
    assert parse_retry_after(None) is None
    anthropic = {"anthropic-ratelimit-tokens-reset": "2015-10-21T07:28:12Z"}
    assert parse_retry_after(anthropic, now=1445412480.0) is None  # not a 429: backoff decides
    assert parse_retry_after(anthropic, rate_limited=True, now=1445412480.0) == 12.0
    assert parse_retry_after({"x-ratelimit-reset-tokens": "junk"}, rate_limited=True) is None


def test_backoff_doubles_within_jitter_and_caps() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.25)
    for attempt, base in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 5.0)]:
        assert base * 0.75 <= policy.delay(attempt) <= base * 1.25
    assert policy.delay(1, retry_after=7.5) == 7.5
    assert policy.delay(1, retry_after=600) == policy.max_retry_after


async def test_retrying_stream_replays_only_before_output() -> None:
    attempts: list[int] = []
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    async def flaky():
        attempts.append(1)
        if len(attempts) < 3:
            raise provider_error(ServerError, "502 bad gateway", retry_after=0.1)
        yield TextDelta("ok")
        yield ModelReply(message={"role": "assistant", "content": []}, usage=Usage())

    items = [
        i async for i in retrying_stream(flaky, policy=RetryPolicy(sleep=record), provider="t")
    ]
    assert len(attempts) == 3 and waits == [0.1, 0.1] and isinstance(items[-1], ModelReply)
