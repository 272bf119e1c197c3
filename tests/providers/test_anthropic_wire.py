"""The Anthropic provider through the real ``anthropic`` SDK against the wire-format server."""

from __future__ import annotations

import json

import pytest

from agent.errors import ProviderError, ProviderUnavailable, RateLimited, ServerError
from agent.providers.anthropic import AnthropicModel
from agent.providers.retry import PartialReplyError, RetryPolicy
from agent.testing.wire_requests import prompt_text
from agent.testing.wire_server import WireServer
from agent.types import ModelReply, TextDelta, ToolCallDelta, user_message
from tests.providers.helpers import DEFERRED, collect, make_request, track


def model_for(srv: WireServer, retry: RetryPolicy | None = None) -> AnthropicModel:
    return track(AnthropicModel(api_key="test-key", base_url=srv.anthropic_base_url, retry=retry))


async def test_text_streams_then_one_reply(wire: WireServer) -> None:
    wire.enqueue("Hello from the wire server, streamed in pieces.")
    items = await collect(model_for(wire).stream(make_request()))
    deltas = [i.text for i in items if isinstance(i, TextDelta)]
    assert len(deltas) > 1 and "".join(deltas) == "Hello from the wire server, streamed in pieces."
    assert isinstance(items[-1], ModelReply) and sum(isinstance(i, ModelReply) for i in items) == 1
    reply = items[-1]
    assert reply.message == {
        "role": "assistant",
        "content": [{"type": "text", "text": "".join(deltas)}],
    }
    assert reply.stop_reason == "end_turn" and reply.model == "claude-sonnet-4-6"
    sent = wire.requests[0]
    assert "test-key" in sent.headers.get("x-api-key", sent.headers.get("authorization", ""))
    assert sent.body["stream"] is True


async def test_tool_calls_arrive_parsed_and_bad_json_is_kept_raw(wire: WireServer) -> None:
    wire.enqueue(
        {
            "text": "Let me look.",
            "tool_calls": [
                {"name": "read_file", "input": {"path": "src/app.py"}},
                {"name": "search_code", "arguments": '{"query": "main", '},
            ],
        }
    )
    items = await collect(model_for(wire).stream(make_request()))
    starts = [i for i in items if isinstance(i, ToolCallDelta)]
    assert [s.name for s in starts] == ["read_file", "search_code"]
    reply = items[-1]
    assert reply.stop_reason == "tool_use"
    text, first, second = reply.message["content"]
    assert text == {"type": "text", "text": "Let me look."}
    assert first == {
        "type": "tool_use",
        "id": starts[0].id,
        "name": "read_file",
        "input": {"path": "src/app.py"},
    }
    assert second["input"] == {"__invalid_json__": '{"query": "main", '}


async def test_cache_breakpoints_prefix_stability_and_usage(wire: WireServer) -> None:
    wire.enqueue({"tool_calls": [{"name": "read_file", "input": {"path": "a.py"}}]}, "done")
    model = model_for(wire)
    first = make_request(user_message("read a.py"))
    reply1 = (await collect(model.stream(first)))[-1]
    tool_use = reply1.message["content"][0]
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_use["id"], "content": "x = 1"}],
    }
    second = make_request(user_message("read a.py"), reply1.message, result, deferred=[DEFERRED])
    reply2 = (await collect(model.stream(second)))[-1]

    body1, body2 = wire.bodies("/v1/messages")
    assert body1["system"] == [
        {"type": "text", "text": "You are Kiln.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body2["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # the moving breakpoint is only on the latest message, and the stored transcript is untouched
    assert "cache_control" not in body2["messages"][0]["content"][0]
    assert "cache_control" not in second.messages[-1]["content"][0]
    # built-in tools are byte-identical and in the same order; the deferred tool comes after them
    assert body2["tools"][:2] == body1["tools"]
    assert body2["tools"][2] == {**DEFERRED.to_dict(), "defer_loading": True}
    raw1, raw2 = (r.raw for r in wire.requests)
    tools_bytes = json.dumps(body1["tools"]).encode()
    assert json.dumps(json.loads(raw2)["tools"][:2]).encode() == tools_bytes and raw1 != raw2

    # usage: the first call writes the cache, the second reads what the first wrote
    u1, u2 = reply1.usage, reply2.usage
    assert u1.cache_read_tokens == 0 and u1.cache_write_tokens > 0 and u1.output_tokens > 0
    assert u2.cache_read_tokens > 0 and u2.cache_write_tokens > 0
    # the server's arithmetic: canonical prefix length / 4, so the provider passed the numbers through
    total2 = len(prompt_text("anthropic", body2)) // 4
    assert u2.cache_read_tokens + u2.cache_write_tokens + u2.input_tokens == total2


async def test_retries_429_and_5xx_then_succeeds_honouring_retry_after(
    wire: WireServer, fast_retry, waits
) -> None:
    wire.enqueue({"error": 429, "retry_after": 3}, {"error": 500}, {"error": 529}, "recovered")
    items = await collect(model_for(wire, fast_retry).stream(make_request()))
    assert items[-1].message["content"][0]["text"] == "recovered"
    assert len(wire.requests) == 4
    assert waits.waits[0] == 3.0  # retry-after wins over the backoff
    assert (
        0.75 <= waits.waits[1] <= 1.25 and 1.5 <= waits.waits[2] <= 2.5
    )  # 0.5 * 2**(n-1) +/- 25 %


async def test_gives_up_after_four_attempts(wire: WireServer, fast_retry) -> None:
    wire.enqueue(*[{"error": 429, "message": "slow down"}] * 5)
    with pytest.raises(RateLimited) as info:
        await collect(model_for(wire, fast_retry).stream(make_request()))
    assert (
        len(wire.requests) == 4
        and "slow down" in str(info.value)
        and "4 attempts" in str(info.value)
    )


async def test_client_error_is_not_retried_and_carries_the_message(
    wire: WireServer, fast_retry
) -> None:
    wire.enqueue({"error": 400, "message": "messages: roles must alternate"})
    with pytest.raises(ProviderError) as info:
        await collect(model_for(wire, fast_retry).stream(make_request()))
    assert not isinstance(info.value, ServerError) and len(wire.requests) == 1
    assert "roles must alternate" in str(info.value) and info.value.exit_code == 4


async def test_stream_dying_after_text_raises_partial(wire: WireServer, fast_retry) -> None:
    wire.enqueue({"text": "I will now explain the", "die": True}, "never used")
    seen: list[str] = []
    with pytest.raises(PartialReplyError) as info:
        async for item in model_for(wire, fast_retry).stream(make_request()):
            if isinstance(item, TextDelta):
                seen.append(item.text)
    assert info.value.partial is True and isinstance(info.value, ProviderError)
    assert info.value.partial_text == "".join(seen) == "I will now explain the"
    assert info.value.partial_message == {
        "role": "assistant",
        "content": [{"type": "text", "text": "I will now explain the"}],
    }
    assert len(wire.requests) == 1  # no retry once text reached the caller


async def test_stream_dying_before_any_text_is_retried(wire: WireServer, fast_retry) -> None:
    wire.enqueue({"die": True}, {"raise": "unavailable"}, "second try")
    items = await collect(model_for(wire, fast_retry).stream(make_request()))
    assert items[-1].message["content"][0]["text"] == "second try" and len(wire.requests) == 3


async def test_overloaded_error_event_inside_the_stream_is_retried(
    wire: WireServer, fast_retry
) -> None:
    wire.enqueue({"stream_error": "overloaded_error"}, "after the overload")
    items = await collect(model_for(wire, fast_retry).stream(make_request()))
    assert (
        items[-1].message["content"][0]["text"] == "after the overload" and len(wire.requests) == 2
    )


async def test_overloaded_error_event_in_the_middle_of_a_reply_keeps_the_text(
    wire: WireServer, fast_retry, waits
) -> None:
    """Once text was shown, asking again would show a second answer: the error is final, one
    line, and what was said is kept for the transcript."""
    wire.enqueue({"text": "The answer is forty", "stream_error": "overloaded_error"}, "unused")
    with pytest.raises(PartialReplyError) as info:
        await collect(model_for(wire, fast_retry).stream(make_request()))
    assert info.value.partial_text == "The answer is forty"
    assert "overloaded_error" in str(info.value) and "\n" not in str(info.value)
    assert len(wire.requests) == 1 and waits.waits == []


async def test_unreachable_endpoint_is_one_clear_error(unused_port: int) -> None:
    model = track(AnthropicModel(api_key="k", base_url=f"http://127.0.0.1:{unused_port}"))
    with pytest.raises(ProviderUnavailable) as info:
        await collect(model.stream(make_request()))
    message = str(info.value)
    assert "\n" not in message and "cannot connect" in message and str(unused_port) in message
    assert "connection refused" in message
    assert "ANTHROPIC_BASE_URL" in info.value.hint and not info.value.retryable


def test_missing_key_names_the_variable() -> None:
    with pytest.raises(ProviderUnavailable) as info:
        AnthropicModel()
    assert "ANTHROPIC_API_KEY" in info.value.hint


async def test_base_url_and_model_come_from_the_environment(wire: WireServer, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", wire.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    monkeypatch.setenv("KILN_MODEL", "claude-haiku-4-5")
    wire.enqueue("hi")
    reply = (await collect(track(AnthropicModel()).stream(make_request())))[-1]
    assert (
        wire.requests[0].body["model"] == "claude-haiku-4-5" and reply.model == "claude-haiku-4-5"
    )
    headers = wire.requests[0].headers
    assert "env-key" in headers.get("x-api-key", headers.get("authorization", ""))
