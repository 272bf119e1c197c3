"""The OpenAI provider through the real ``openai`` SDK against the wire-format server."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.errors import ProviderUnavailable, ServerError
from agent.providers.openai import OpenAIModel, build_params, to_openai_messages
from agent.providers.retry import PartialReplyError, RetryPolicy
from agent.testing.wire_server import WireServer
from agent.types import ModelReply, TextDelta, ToolCallDelta, user_message
from tests.providers.helpers import DEFERRED, collect, make_request, track


def model_for(srv: WireServer, retry: RetryPolicy | None = None) -> OpenAIModel:
    return track(OpenAIModel(api_key="sk-test", base_url=srv.openai_base_url, retry=retry))


async def test_text_streams_then_one_reply(wire: WireServer) -> None:
    wire.enqueue("Streaming over chat completions.")
    items = await collect(model_for(wire).stream(make_request()))
    deltas = [i.text for i in items if isinstance(i, TextDelta)]
    assert len(deltas) > 1 and "".join(deltas) == "Streaming over chat completions."
    assert [type(i) for i in items].count(ModelReply) == 1 and isinstance(items[-1], ModelReply)
    assert items[-1].message["content"] == [
        {"type": "text", "text": "Streaming over chat completions."}
    ]
    assert items[-1].stop_reason == "end_turn" and items[-1].model == "gpt-4.1"
    body = wire.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert wire.requests[0].headers["authorization"] == "Bearer sk-test"


async def test_parallel_tool_calls_are_gathered_by_index(wire: WireServer) -> None:
    wire.enqueue(
        {
            "tool_calls": [
                {"name": "read_file", "input": {"path": "a.py"}},
                {"name": "search_code", "input": {"query": "def main", "limit": 3}},
                {"name": "read_file", "arguments": "{not json"},
            ]
        }
    )
    items = await collect(model_for(wire).stream(make_request()))
    starts = [i for i in items if isinstance(i, ToolCallDelta)]
    assert [s.name for s in starts] == ["read_file", "search_code", "read_file"]
    reply = items[-1]
    assert reply.stop_reason == "tool_use"
    assert [b["input"] for b in reply.message["content"]] == [
        {"path": "a.py"},
        {"query": "def main", "limit": 3},
        {"__invalid_json__": "{not json"},
    ]
    assert [b["id"] for b in reply.message["content"]] == [s.id for s in starts]


async def test_usage_maps_cached_tokens_and_transcript_converts(wire: WireServer) -> None:
    wire.enqueue(
        {"tool_calls": [{"name": "read_file", "input": {"path": "a.py"}}]}, "The file sets x."
    )
    model = model_for(wire)
    first = make_request(user_message("what is in a.py?"))
    reply1 = (await collect(model.stream(first)))[-1]
    call = reply1.message["content"][0]
    result = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": call["id"], "content": "x = 1"},
            {"type": "text", "text": "<agent_status>steps: 1</agent_status>"},
        ],
    }
    second = make_request(
        user_message("what is in a.py?"), reply1.message, result, deferred=[DEFERRED]
    )
    reply2 = (await collect(model.stream(second)))[-1]
    assert reply2.message["content"][0]["text"] == "The file sets x."

    body1, body2 = wire.bodies("/chat/completions")
    assert [m["role"] for m in body2["messages"]] == ["system", "user", "assistant", "tool", "user"]
    assistant, tool = body2["messages"][2], body2["messages"][3]
    assert assistant["tool_calls"][0]["function"] == {
        "name": "read_file",
        "arguments": '{"path": "a.py"}',
    }
    assert tool == {"role": "tool", "tool_call_id": call["id"], "content": "x = 1"}
    names = [t["function"]["name"] for t in body2["tools"]]
    # deferred tools are never declared: tools is the same on every request (call_tool proxy)
    assert names == ["read_file", "search_code"] and body2["tools"] == body1["tools"]

    assert reply1.usage.cache_read_tokens == 0 and reply1.usage.input_tokens > 0
    # the second prompt shares the first one's prefix: the server reports it as cached tokens,
    # and the provider moves it from input to cache_read
    assert reply2.usage.cache_read_tokens > 0
    assert reply2.usage.cache_write_tokens == 0 and reply2.usage.output_tokens > 0


def test_conversion_is_deterministic_and_keeps_invalid_arguments_raw() -> None:
    messages = [
        user_message("go"),
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "c1",
                    "name": "grep",
                    "input": {"__invalid_json__": "{oops"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": [{"type": "text", "text": "bad args"}],
                    "is_error": True,
                }
            ],
        },
    ]
    out = to_openai_messages("sys", messages)
    assert out[2]["tool_calls"][0]["function"]["arguments"] == "{oops"
    assert out[3] == {"role": "tool", "tool_call_id": "c1", "content": "Error: bad args"}
    messages[2]["content"][0]["content"] = [{"type": "text", "text": "error: ToolError\nx"}]
    assert to_openai_messages("sys", messages)[3]["content"] == "error: ToolError\nx"  # not doubled
    request = make_request(*messages)
    assert build_params(request, "gpt-4.1") == build_params(request, "gpt-4.1")
    assert "max_completion_tokens" in build_params(request, "gpt-5-mini")


async def test_retries_then_partial_when_text_was_streamed(
    wire: WireServer, fast_retry, waits
) -> None:
    wire.enqueue(
        {"error": 500}, {"error": 429, "retry_after": 1}, {"text": "Half an answ", "die": True}
    )
    with pytest.raises(PartialReplyError) as info:
        await collect(model_for(wire, fast_retry).stream(make_request()))
    assert info.value.partial_text == "Half an answ" and len(wire.requests) == 3
    assert len(waits.waits) == 2 and waits.waits[1] == 1.0


async def test_server_errors_exhaust_into_server_error(wire: WireServer, fast_retry) -> None:
    wire.enqueue(*[{"error": 503, "message": "upstream overloaded"}] * 4)
    with pytest.raises(ServerError) as info:
        await collect(model_for(wire, fast_retry).stream(make_request()))
    assert "upstream overloaded" in str(info.value) and len(wire.requests) == 4


async def test_unreachable_endpoint_is_one_clear_error(unused_port: int) -> None:
    model = track(OpenAIModel(base_url=f"http://127.0.0.1:{unused_port}/v1"))
    with pytest.raises(ProviderUnavailable) as info:
        await collect(model.stream(make_request()))
    assert "\n" not in str(info.value) and "cannot connect" in str(info.value)
    assert "OPENAI_BASE_URL" in info.value.hint


async def test_compatible_server_needs_no_key(wire: WireServer, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", wire.openai_base_url)
    monkeypatch.setenv("KILN_MODEL", "qwen2.5-coder:7b")
    wire.enqueue("hello from ollama")
    model = track(OpenAIModel())
    reply = (await collect(model.stream(make_request())))[-1]
    assert reply.message["content"][0]["text"] == "hello from ollama"
    assert wire.requests[0].headers["authorization"] == "Bearer not-needed"
    assert wire.requests[0].body["model"] == "qwen2.5-coder:7b" and model.context_window == 128_000


def test_missing_key_and_base_url_names_both_variables() -> None:
    with pytest.raises(ProviderUnavailable) as info:
        OpenAIModel()
    assert "OPENAI_API_KEY" in info.value.hint and "OPENAI_BASE_URL" in info.value.hint


@given(
    rounds=st.lists(
        st.tuples(
            st.lists(st.sampled_from(["read_file", "grep", "run_command"]), min_size=0, max_size=3),
            st.booleans(),  # the answering user message also carries text (status bar)
            st.text(max_size=20),
        ),
        max_size=6,
    )
)
@settings(max_examples=60, deadline=None)
def test_converted_transcripts_keep_tool_messages_right_after_their_calls(rounds: list) -> None:
    messages = [user_message("goal")]
    for n, (names, with_text, text) in enumerate(rounds):
        calls = [
            {"type": "tool_use", "id": f"c{n}_{i}", "name": name, "input": {"i": i}}
            for i, name in enumerate(names)
        ]
        messages.append({"role": "assistant", "content": [{"type": "text", "text": text}, *calls]})
        answer = [
            {"type": "tool_result", "tool_use_id": c["id"], "content": f"out {c['id']}"}
            for c in calls
        ]
        if with_text or not answer:
            answer.append({"type": "text", "text": "<agent_status>ok</agent_status>"})
        messages.append({"role": "user", "content": answer})
    out = to_openai_messages("sys", messages)
    assert out == to_openai_messages("sys", messages)  # deterministic
    pending: list[str] = []
    for msg in out:
        if msg["role"] == "tool":
            assert msg["tool_call_id"] == pending.pop(0)  # in order, right after its call
        else:
            assert not pending, "a non-tool message interrupted the tool results"
            pending = [c["id"] for c in msg.get("tool_calls", [])]
    assert not pending
