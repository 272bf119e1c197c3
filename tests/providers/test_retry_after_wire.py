"""How long a provider asks Kiln to wait, through the real SDKs against the wire server: the
``retry-after`` and ``retry-after-ms`` headers of a 429 or a 529, obeyed when the wait is one
Kiln will make, and a wait longer than that said at once instead of retried in vain."""

from __future__ import annotations

import json

import pytest

from agent.errors import RateLimited, ServerError
from agent.providers.anthropic import AnthropicModel
from agent.providers.openai import OpenAIModel
from agent.providers.retry import RetryPolicy
from agent.testing.wire_server import WireServer
from tests.providers.conftest import SleepRecorder
from tests.providers.helpers import collect, make_request, track


def model(api: str, srv: WireServer, waits: SleepRecorder) -> AnthropicModel | OpenAIModel:
    policy = RetryPolicy(sleep=waits)
    if api == "anthropic":
        return track(AnthropicModel(api_key="k", base_url=srv.url, retry=policy))
    return track(OpenAIModel(api_key="k", base_url=srv.openai_base_url, retry=policy))


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_retry_after_ms_sets_the_wait(
    wire: WireServer, waits: SleepRecorder, api: str
) -> None:
    wire.enqueue({"error": 529, "retry_after_ms": 2500}, {"error": 429, "retry_after_ms": 40}, "ok")
    items = await collect(model(api, wire, waits).stream(make_request()))
    assert items[-1].message["content"] == [{"type": "text", "text": "ok"}]
    assert waits.waits == [pytest.approx(2.5), pytest.approx(0.04)]


@pytest.mark.parametrize(("status", "kind"), [(429, RateLimited), (529, ServerError)])
@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_wait_longer_than_kiln_makes_is_said_at_once(
    wire: WireServer, waits: SleepRecorder, api: str, status: int, kind: type
) -> None:
    """Before, Kiln waited its 60 s cap, asked again while the server had said an hour, and
    gave up after four refused requests and three minutes."""
    wire.enqueue(*[{"error": status, "retry_after": 3600, "message": "come back later"}] * 4)
    with pytest.raises(kind) as info:
        await collect(model(api, wire, waits).stream(make_request()))
    assert len(wire.bodies()) == 1 and waits.waits == []
    assert "come back later" in str(info.value)
    assert "asks to wait 3600 s" in str(info.value)


def answered(status: int, should_retry: str | None = None, kind: str = "api_error") -> dict:
    body = json.dumps({"type": "error", "error": {"type": kind, "message": "the words"}})
    headers = {} if should_retry is None else {"x-should-retry": should_retry}
    return {"raw": {"status": status, "content_type": "application/json", "body": body,
                    "headers": headers}}  # fmt: skip


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_the_servers_x_should_retry_is_obeyed(
    wire: WireServer, waits: SleepRecorder, api: str
) -> None:
    """The SDKs obey ``x-should-retry`` (their own retries are off here, so Kiln must): a 500
    that says false is not asked again, a 409 that says true is."""
    wire.enqueue(answered(500, "false"))
    with pytest.raises(ServerError) as info:
        await collect(model(api, wire, waits).stream(make_request()))
    assert not info.value.retryable and len(wire.bodies()) == 1 and waits.waits == []
    wire.enqueue(answered(409, "true"), "ok")
    items = await collect(model(api, wire, waits).stream(make_request()))
    assert items[-1].message["content"] == [{"type": "text", "text": "ok"}]
    assert len(waits.waits) == 1


@pytest.mark.parametrize("status", [408, 409])
@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_request_timeout_or_lock_conflict_is_retried_as_the_sdks_do(
    wire: WireServer, waits: SleepRecorder, api: str, status: int
) -> None:
    """Both SDKs' own policies retry a 408 (request timeout) and a 409 (lock timeout) that has
    no ``x-should-retry``; Kiln gave up at once, with "the provider rejected the request"."""
    wire.enqueue(answered(status, kind="timeout_error"), "ok")
    items = await collect(model(api, wire, waits).stream(make_request()))
    assert items[-1].message["content"] == [{"type": "text", "text": "ok"}]
    assert len(wire.bodies()) == 2 and len(waits.waits) == 1
