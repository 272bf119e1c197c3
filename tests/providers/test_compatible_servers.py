"""What OpenAI-compatible servers and proxies really send, through the real SDKs against
hand-written wire replies (``raw`` steps): tool calls without ids, with repeated ids or without
an ``index``; a proxy that answers a streamed request with a 200 HTML page or plain JSON; the
rate-limit headers each API uses to say when to come back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.errors import ProviderError
from agent.providers.anthropic import AnthropicModel
from agent.providers.openai import OpenAIModel, to_openai_messages
from agent.providers.retry import RetryPolicy
from agent.testing.wire_server import WireServer
from agent.types import ModelReply
from tests.providers.conftest import SleepRecorder
from tests.providers.helpers import collect, make_request, track


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [choice]}  # fmt: skip


def call(index: int | None, id: str | None = None, name: str | None = None,
         args: str | None = None) -> dict[str, Any]:  # fmt: skip
    fn = {k: v for k, v in (("name", name), ("arguments", args)) if v is not None}
    out: dict[str, Any] = {"type": "function", "function": fn}
    if index is not None:
        out["index"] = index
    if id is not None:
        out["id"] = id
    return out


def tool_stream(*calls: dict[str, Any]) -> dict[str, Any]:
    frames = [chunk({"tool_calls": [c]}) for c in calls]
    return {"raw": {"frames": [*frames, chunk(finish="tool_calls"), "data: [DONE]"]}}


def openai(srv: WireServer, retry: RetryPolicy | None = None) -> OpenAIModel:
    return track(OpenAIModel(base_url=srv.openai_base_url, api_key="k", model="gpt-4.1",
                             retry=retry or RetryPolicy(sleep=SleepRecorder())))  # fmt: skip


async def reply_of(model: Any) -> ModelReply:
    items = await collect(model.stream(make_request()))
    assert isinstance(items[-1], ModelReply)
    return items[-1]


def tool_ids(reply: ModelReply) -> list[str]:
    return [b["id"] for b in reply.message["content"] if b["type"] == "tool_use"]


async def test_missing_and_repeated_tool_call_ids_become_unique(wire: WireServer) -> None:
    step = tool_stream(
        call(0, None, "read_file", '{"path": "a"}'),
        call(1, None, "read_file", ""),
        call(2, "same", "read_file", "{}"),
        call(3, "same", "search_code", '{"query": "q"}'),
    )
    wire.enqueue(step, step)
    model = openai(wire)
    first, second = await reply_of(model), await reply_of(model)
    for reply in (first, second):
        assert len(set(tool_ids(reply))) == 4 and all(tool_ids(reply))
        assert tool_ids(reply)[2] == "same"
    # The ids made up for calls that came without one are never reused on a later step.
    made_up = [i for i in tool_ids(first) + tool_ids(second) if i != "same"]
    assert len(set(made_up)) == 6
    assert [b["input"] for b in first.message["content"]] == [
        {"path": "a"}, {}, {}, {"query": "q"}
    ]  # fmt: skip
    # Sent back, each result still follows its own call.
    tool_msgs = [m for m in to_openai_messages("s", [first.message]) if m.get("tool_calls")]
    assert [c["id"] for c in tool_msgs[0]["tool_calls"]] == tool_ids(first)


async def test_pieces_without_an_index_continue_the_call_they_belong_to(wire: WireServer) -> None:
    wire.enqueue(
        tool_stream(
            call(None, "c1", "read_file", '{"pa'),
            call(None, args='th": "a.py"}'),
            call(None, "c2", "search_code", '{"query"'),
            call(None, args=': "x"}'),
        )
    )
    reply = await reply_of(openai(wire))
    assert [(b["id"], b["name"], b["input"]) for b in reply.message["content"]] == [
        ("c1", "read_file", {"path": "a.py"}),
        ("c2", "search_code", {"query": "x"}),
    ]


HTML = {"raw": {"body": "<html><body>Please sign in</body></html>"}}
PLAIN_JSON = {"raw": {"content_type": "application/json", "body": json.dumps({"id": "x"})}}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("step", [HTML, PLAIN_JSON], ids=["html", "json"])
async def test_a_200_that_is_not_an_event_stream_is_one_clear_error_not_retried(
    wire: WireServer, provider: str, step: dict[str, Any]
) -> None:
    wire.enqueue(step, step, step, step)
    waits = SleepRecorder()
    if provider == "openai":
        model: Any = openai(wire, RetryPolicy(sleep=waits))
        var = "OPENAI_BASE_URL"
    else:
        model = track(AnthropicModel(base_url=wire.url, api_key="k",
                                     retry=RetryPolicy(sleep=waits)))  # fmt: skip
        var = "ANTHROPIC_BASE_URL"
    with pytest.raises(ProviderError) as info:
        await collect(model.stream(make_request()))
    assert not info.value.retryable and waits.waits == []
    assert len(wire.bodies()) == 1
    ctype = step["raw"].get("content_type", "text/html")
    assert ctype in str(info.value) and "not an event stream" in str(info.value)
    assert var in info.value.hint


def rate_limited(headers: dict[str, str]) -> dict[str, Any]:
    body = json.dumps({"error": {"message": "slow down", "type": "rate_limit_error"}})
    return {"raw": {"status": 429, "content_type": "application/json", "body": body,
                    "headers": headers}}  # fmt: skip


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"x-ratelimit-reset-requests": "2s", "x-ratelimit-reset-tokens": "1m30s"}, 90.0),
        ({"x-ratelimit-reset-tokens": "250ms"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),
    ],
)
async def test_openai_rate_limit_headers_set_the_wait(
    wire: WireServer, headers: dict[str, str], expected: float
) -> None:
    wire.enqueue(rate_limited(headers), "ok")
    waits = SleepRecorder()
    reply = await reply_of(openai(wire, RetryPolicy(sleep=waits, max_retry_after=120)))
    assert reply.message["content"] == [{"type": "text", "text": "ok"}]
    assert waits.waits == [pytest.approx(expected, abs=0.01)]


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        ({"message": "Provider returned error", "code": 502}, "(502): Provider returned error"),
        ({"message": "Rate limit exceeded", "code": 429}, "(429): Rate limit exceeded"),
        ({"message": "upstream went away"}, "(500): upstream went away"),
    ],
)
async def test_an_error_event_inside_a_200_stream_is_retried_before_any_output(
    wire: WireServer, error: dict[str, Any], shown: str
) -> None:
    """OpenRouter, vLLM and LiteLLM report an upstream failure as ``data: {"error": ...}``
    after they have already answered 200."""
    wire.enqueue({"raw": {"frames": [{"error": error}]}}, "ok")
    waits = SleepRecorder()
    reply = await reply_of(openai(wire, RetryPolicy(sleep=waits)))
    assert reply.message["content"] == [{"type": "text", "text": "ok"}]
    assert len(waits.waits) == 1
    # When it keeps happening, the last error names the code and the server's words.
    wire.enqueue(*[{"raw": {"frames": [{"error": error}]}}] * 4)
    with pytest.raises(ProviderError) as info:
        await collect(openai(wire, RetryPolicy(sleep=waits)).stream(make_request()))
    assert info.value.retryable and shown in str(info.value)


async def test_out_of_quota_429_is_not_waited_on(wire: WireServer) -> None:
    """OpenAI's 429 ``insufficient_quota`` is billing, not a rate limit: retrying repeats it."""
    body = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and "
            "billing details.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    step = {"raw": {"status": 429, "content_type": "application/json", "body": json.dumps(body)}}
    wire.enqueue(step, step, step, step)
    waits = SleepRecorder()
    with pytest.raises(ProviderError) as info:
        await collect(openai(wire, RetryPolicy(sleep=waits)).stream(make_request()))
    assert not info.value.retryable and waits.waits == [] and len(wire.bodies()) == 1
    assert "OPENAI_API_KEY" in info.value.hint and "billing" in info.value.hint


async def test_arguments_sent_as_an_object_instead_of_json_text(wire: WireServer) -> None:
    """Some compatible servers put the arguments object itself where JSON text belongs."""
    fn = {"name": "read_file", "arguments": {"path": "a.py"}}
    wire.enqueue(tool_stream({"index": 0, "id": "c1", "type": "function", "function": fn}))
    reply = await reply_of(openai(wire))
    assert reply.message["content"] == [
        {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.py"}}
    ]


def _anthropic_event(kind: str, **fields: Any) -> str:
    return f"event: {kind}\ndata: " + json.dumps({"type": kind, **fields})


@pytest.mark.parametrize(
    ("deltas", "expected"),
    [([], {"path": "a.py"}), (['{"path": ', '"b.py"}'], {"path": "b.py"})],
    ids=["whole-in-start", "streamed"],
)
async def test_anthropic_tool_input_given_whole_in_the_start_event_is_kept(
    wire: WireServer, deltas: list[str], expected: dict[str, Any]
) -> None:
    """Anthropic sends ``input: {}`` then ``input_json_delta`` pieces; proxies for Bedrock or
    Vertex may send the whole input in ``content_block_start`` and no pieces."""
    ev = _anthropic_event
    usage = {"input_tokens": 10, "output_tokens": 1}
    message = {"id": "m", "type": "message", "role": "assistant", "content": [],
               "model": "claude-sonnet-4-6", "stop_reason": None, "usage": usage}  # fmt: skip
    start = {"type": "tool_use", "id": "toolu_1", "name": "read_file",
             "input": {} if deltas else {"path": "a.py"}}  # fmt: skip
    pieces = [
        ev("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": d})
        for d in deltas
    ]
    frames = [ev("message_start", message=message),
              ev("content_block_start", index=0, content_block=start), *pieces,
              ev("content_block_stop", index=0),
              ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 9}),
              ev("message_stop")]  # fmt: skip
    wire.enqueue({"raw": {"frames": frames}})
    model = track(AnthropicModel(base_url=wire.url, api_key="k"))
    reply = await reply_of(model)
    assert reply.message["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": expected}
    ]


async def test_not_found_names_the_model_and_the_base_url(wire: WireServer) -> None:
    """Ollama without ``/v1`` answers ``404 page not found``; OpenAI says the model does not
    exist. Either way: which two settings to check."""
    wire.enqueue({"raw": {"status": 404, "content_type": "text/plain",
                          "body": "404 page not found"}})  # fmt: skip
    with pytest.raises(ProviderError) as info:
        await collect(openai(wire).stream(make_request()))
    assert "HTTP 404" in str(info.value) and not info.value.retryable
    assert "KILN_MODEL" in info.value.hint
    assert f"OPENAI_BASE_URL ({wire.openai_base_url}), which usually ends in /v1" in (
        info.value.hint
    )
    wire.enqueue({"raw": {"status": 404, "content_type": "text/plain", "body": "not found"}})
    anthropic = track(AnthropicModel(base_url=wire.url + "/v1", api_key="k"))
    with pytest.raises(ProviderError) as info:
        await collect(anthropic.stream(make_request()))
    assert f"ANTHROPIC_BASE_URL ({wire.url}/v1), which usually does not end in /v1" in (
        info.value.hint
    )


async def test_a_server_refusing_stream_options_is_asked_again_without_it(
    wire: WireServer,
) -> None:
    """Older Azure API versions and some proxies reject ``stream_options`` with a 400."""
    body = {"error": {"message": "Unrecognized request argument supplied: stream_options",
                      "type": "invalid_request_error"}}  # fmt: skip
    wire.enqueue({"raw": {"status": 400, "content_type": "application/json",
                          "body": json.dumps(body)}}, "ok", "again")  # fmt: skip
    model = openai(wire)
    assert (await reply_of(model)).message["content"] == [{"type": "text", "text": "ok"}]
    assert (await reply_of(model)).message["content"] == [{"type": "text", "text": "again"}]
    sent = wire.bodies("/chat/completions")
    assert ["stream_options" in b for b in sent] == [True, False, False]


@pytest.mark.parametrize(
    ("kind", "retried"),
    [("rate_limit_error", True), ("overloaded_error", True), ("invalid_request_error", False)],
)
async def test_anthropic_error_event_mid_stream_is_classified_by_its_type(
    wire: WireServer, kind: str, retried: bool
) -> None:
    """Anthropic reports errors inside the 200 stream as an ``error`` event with a type."""
    ev = _anthropic_event
    usage = {"input_tokens": 10, "output_tokens": 1}
    message = {"id": "m", "type": "message", "role": "assistant", "content": [],
               "model": "claude-sonnet-4-6", "stop_reason": None, "usage": usage}  # fmt: skip
    error = ev("error", error={"type": kind, "message": "the server's words"})
    wire.enqueue({"raw": {"frames": [ev("message_start", message=message), error]}}, "ok")
    waits = SleepRecorder()
    model = track(AnthropicModel(base_url=wire.url, api_key="k", retry=RetryPolicy(sleep=waits)))
    if retried:
        assert (await reply_of(model)).message["content"] == [{"type": "text", "text": "ok"}]
        assert len(waits.waits) == 1
    else:
        with pytest.raises(ProviderError) as info:
            await collect(model.stream(make_request()))
        assert f"error event in the stream ({kind}): the server's words" in str(info.value)
        assert waits.waits == []


async def test_interleaved_parallel_calls_in_many_pieces(wire: WireServer) -> None:
    """Index 0 and 1 alternate, each argument string split mid-token, then a usage-only chunk
    with ``choices: []`` (``stream_options.include_usage``)."""
    pieces = [call(0, "a", "read_file", ""), call(1, "b", "search_code", "")]
    for first, second in zip(['{"pa', 'th": "x', '.py"}'], ['{"que', 'ry": "q"', "}"], strict=True):
        pieces += [call(0, args=first), call(1, args=second)]
    step = tool_stream(*pieces)
    usage = {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107,
             "prompt_tokens_details": {"cached_tokens": 60}}  # fmt: skip
    step["raw"]["frames"].insert(-1, {**chunk(), "choices": [], "usage": usage})
    wire.enqueue(step)
    reply = await reply_of(openai(wire))
    assert [(b["id"], b["input"]) for b in reply.message["content"]] == [
        ("a", {"path": "x.py"}),
        ("b", {"query": "q"}),
    ]
    assert (reply.usage.input_tokens, reply.usage.cache_read_tokens) == (40, 60)
    assert reply.usage.output_tokens == 7 and reply.stop_reason == "tool_use"


async def test_a_stream_dropped_inside_a_tool_call_says_the_call_was_not_run(
    wire: WireServer,
) -> None:
    frames = [chunk({"content": "Reading it."}), chunk({"tool_calls": [call(0, "a", "read_file",
              '{"pa')]})]  # fmt: skip
    wire.enqueue({"raw": {"frames": frames, "end": "die"}})
    with pytest.raises(ProviderError) as info:
        await collect(openai(wire).stream(make_request()))
    assert "broke off after 11 characters and 1 unfinished tool call(s), not run" in str(info.value)
    assert info.value.partial_message["content"] == [  # type: ignore[attr-defined]
        {"type": "text", "text": "Reading it."}
    ]
    assert len(wire.bodies()) == 1
