"""The scripted model: replies, raise/sleep steps, callables, matching, recording and usage."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent.errors import ConfigError, ProviderError, ProviderUnavailable, RateLimited, ServerError
from agent.providers import select_model
from agent.providers.retry import PartialReplyError, RetryPolicy
from agent.providers.scripted import ScriptedModel, ScriptExhausted, scripted_usage
from agent.types import ModelReply, Request, TextDelta, ToolCallDelta, canonical_json, user_message
from tests.providers.helpers import collect, make_request


async def reply_of(model: ScriptedModel, request: Request) -> ModelReply:
    items = await collect(model.stream(request))
    assert isinstance(items[-1], ModelReply)
    return items[-1]


async def test_text_and_tool_call_steps_in_order() -> None:
    model = ScriptedModel(
        [
            "hello",
            {"text": "Reading.", "tool_calls": [{"name": "read_file", "input": {"path": "a.py"}}]},
        ]
    )
    items = await collect(model.stream(make_request()))
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == "hello"
    second = await collect(model.stream(make_request()))
    assert [i.name for i in second if isinstance(i, ToolCallDelta)] == ["read_file"]
    reply = second[-1]
    assert reply.stop_reason == "tool_use"
    assert reply.message["content"][1] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "read_file",
        "input": {"path": "a.py"},
    }
    assert len(model.requests) == 2 and model.script.remaining == 0


async def test_requests_are_recorded_as_sent() -> None:
    model = ScriptedModel(["one"])
    request = make_request(user_message("first"))
    await reply_of(model, request)
    request.messages.append(user_message("mutated later"))
    assert len(model.requests[0].messages) == 1  # a snapshot, not the live list


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("rate_limit", RateLimited),
        ("server", ServerError),
        ("unavailable", ProviderUnavailable),
        ("bad_request", ProviderError),
    ],
)
async def test_raise_steps(kind: str, error: type[Exception]) -> None:
    model = ScriptedModel([{"raise": kind, "message": f"boom {kind}"}, "after"])
    with pytest.raises(error, match=f"boom {kind}") as info:
        await collect(model.stream(make_request()))
    assert info.value.hint
    assert (await reply_of(model, make_request())).message["content"][0]["text"] == "after"


async def test_partial_step_streams_text_then_fails_with_it() -> None:
    model = ScriptedModel([{"raise": "partial", "text": "So far I found"}])
    seen: list[str] = []
    with pytest.raises(PartialReplyError) as info:
        async for item in model.stream(make_request()):
            seen.append(item.text)
    assert (
        seen == ["So far I found"]
        and info.value.partial_text == "So far I found"
        and info.value.partial
    )


async def test_retry_policy_can_absorb_raise_steps() -> None:
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    model = ScriptedModel(
        [{"raise": "rate_limit"}, {"raise": "server"}, "ok"], retry=RetryPolicy(sleep=record)
    )
    assert (await reply_of(model, make_request())).message["content"][0]["text"] == "ok"
    assert len(waits) == 2 and len(model.requests) == 3


async def test_sleep_step_delays_and_can_be_cancelled() -> None:
    model = ScriptedModel([{"sleep": 0.05}, "awake", {"sleep": 30}, "never"])
    assert (await reply_of(model, make_request())).message["content"][0]["text"] == "awake"
    task = asyncio.ensure_future(reply_of(model, make_request()))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_wait_for_step_holds_the_reply_until_the_file_exists(tmp_path: Path) -> None:
    release = tmp_path / "release"
    model = ScriptedModel([{"wait_for": str(release)}, "released"])
    task = asyncio.ensure_future(reply_of(model, make_request()))
    done, _ = await asyncio.wait({task}, timeout=0.2)
    assert not done  # held while the file is missing
    release.touch()
    reply = await asyncio.wait_for(task, 60)
    assert reply.message["content"][0]["text"] == "released"


async def test_callable_steps_see_the_request_and_may_be_async() -> None:
    def echo(request: Request) -> dict:
        last = request.messages[-1]["content"][0]["text"]
        return {"text": f"you said {last}"}

    async def later(request: Request) -> str:
        return f"{len(request.messages)} messages"

    model = ScriptedModel([echo, later])
    assert (await reply_of(model, make_request(user_message("ping")))).message["content"][0][
        "text"
    ] == "you said ping"
    assert (await reply_of(model, make_request(user_message("a"), user_message("b")))).message[
        "content"
    ][0]["text"] == "2 messages"


async def test_match_picks_the_step_for_the_latest_tool_result() -> None:
    model = ScriptedModel(
        [{"match": "2 passed", "text": "all green"}, {"match": "re:FAIL\\w*", "text": "still red"}]
    )
    failing = make_request(
        user_message("run tests"),
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "run_command", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": "1 FAILED"}],
        },
    )
    assert (await reply_of(model, failing)).message["content"][0]["text"] == "still red"
    with pytest.raises(ScriptExhausted):
        await collect(model.stream(failing))  # the remaining step wants "2 passed"
    model.enqueue("fallback")
    assert (await reply_of(model, failing)).message["content"][0]["text"] == "fallback"
    assert model.script.remaining == 1


async def test_usage_is_canonical_json_length_over_four() -> None:
    model = ScriptedModel(["abc"])
    request = make_request()
    reply = await reply_of(model, request)
    assert reply.usage.input_tokens == len(canonical_json(request.to_dict())) // 4
    assert reply.usage.output_tokens == max(1, len(canonical_json(reply.message["content"])) // 4)
    assert reply.usage == scripted_usage(request, reply.message)


async def test_simulated_cache_counts_the_shared_prefix() -> None:
    model = ScriptedModel(["one", "two"], simulate_cache=True)
    first = make_request(user_message("hello"))
    await reply_of(model, first)
    second = make_request(
        user_message("hello"), {"role": "assistant", "content": [{"type": "text", "text": "one"}]}
    )
    usage = (await reply_of(model, second)).usage
    assert usage.cache_read_tokens > 0
    assert (
        usage.cache_read_tokens + usage.input_tokens == len(canonical_json(second.to_dict())) // 4
    )


async def test_kiln_script_file_drives_select_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["from the file"]))
    monkeypatch.setenv("KILN_PROVIDER", "scripted")
    monkeypatch.setenv("KILN_SCRIPT", str(script))
    model = select_model()
    assert model.name == "scripted"
    reply = (await collect(model.stream(make_request())))[-1]
    assert reply.message["content"][0]["text"] == "from the file"


@pytest.mark.parametrize(
    ("content", "needle"),
    [(None, "KILN_SCRIPT"), ("{not json", "not valid JSON"), ('{"a": 1}', "JSON list")],
)
def test_bad_scripts_are_config_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str | None, needle: str
) -> None:
    monkeypatch.setenv("KILN_PROVIDER", "scripted")
    if content is not None:
        path = tmp_path / "s.json"
        path.write_text(content)
        monkeypatch.setenv("KILN_SCRIPT", str(path))
    else:
        monkeypatch.delenv("KILN_SCRIPT", raising=False)
    with pytest.raises(ConfigError) as info:
        select_model()
    assert needle in f"{info.value} {info.value.hint}" and info.value.exit_code == 2


async def test_a_delayed_reply_can_be_cancelled_mid_wait() -> None:
    model = ScriptedModel([{"text": "late", "delay": 30}])
    task = asyncio.ensure_future(reply_of(model, make_request()))
    await asyncio.sleep(0.05)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(model.requests) == 1
