"""The wire server counts Anthropic cache reads as the API does: only from an entry an earlier
request wrote at a breakpoint, found from a breakpoint of this one or up to 20 block boundaries
before it. It used to count the longest prefix shared with any earlier request, so a request
whose breakpoints could not reach the previous entry still reported the whole history as read,
and a test or bench could not tell a placement that works on the real API from one that misses.
Real anthropic SDK, real HTTP."""

from __future__ import annotations

from typing import Any

import anthropic

from agent.providers.anthropic import AnthropicModel
from agent.testing.wire_server import WireServer
from agent.types import user_message
from tests.providers.helpers import collect, make_request

EPHEMERAL = {"type": "ephemeral"}
SYSTEM = [{"type": "text", "text": "You are Kiln. " * 200, "cache_control": EPHEMERAL}]


def _blocks(start: int, count: int, marked: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": f"note {n}: " + "word " * 40, **({"cache_control": EPHEMERAL}
                                                              if n in marked else {})}
        for n in range(start, start + count)
    ]  # fmt: skip


def _usage(client: anthropic.Anthropic, blocks: list[dict[str, Any]]) -> Any:
    reply = client.messages.create(
        model="claude-sonnet-4-6", max_tokens=64, system=SYSTEM,  # type: ignore[arg-type]
        messages=[{"role": "user", "content": blocks}],  # type: ignore[list-item, typeddict-item]
    )  # fmt: skip
    return reply.usage


def test_a_read_needs_a_breakpoint_within_reach_of_an_earlier_entry() -> None:
    with WireServer(["one", "two", "three", "four"]) as srv:
        client = anthropic.Anthropic(api_key="k", base_url=srv.url, max_retries=0)
        head = _blocks(0, 30)
        first = _usage(client, _blocks(0, 30, marked=(29,)))
        # 25 blocks more, a breakpoint on the last only: 25 boundaries back is out of reach, so
        # only the system block's entry is read
        far = _usage(client, head + _blocks(100, 25, marked=(124,)))
        # the same with a breakpoint where the first request ended: all of that is read
        near = _usage(client, _blocks(0, 30, marked=(29,)) + _blocks(200, 25, marked=(224,)))
        # 20 blocks more: the last breakpoint reaches back to the entry the first request wrote
        reach = _usage(client, head + _blocks(300, 20, marked=(319,)))
    whole = first.cache_creation_input_tokens  # what the first request wrote: all of it
    assert first.cache_read_input_tokens == 0
    assert 0 < far.cache_read_input_tokens < whole / 2
    assert near.cache_read_input_tokens >= whole - 8
    assert reach.cache_read_input_tokens >= whole - 8


def test_another_model_does_not_read_the_entries() -> None:
    with WireServer(["one", "two"]) as srv:
        client = anthropic.Anthropic(api_key="k", base_url=srv.url, max_retries=0)
        _usage(client, _blocks(0, 3, marked=(2,)))
        other = client.messages.create(
            model="claude-opus-4-1", max_tokens=64, system=SYSTEM,  # type: ignore[arg-type]
            messages=[{"role": "user", "content": _blocks(0, 3, marked=(2,))}],  # type: ignore[list-item, typeddict-item]
        )  # fmt: skip
    assert other.usage.cache_read_input_tokens == 0


async def test_kilns_breakpoints_read_the_previous_request_after_a_fan_out() -> None:
    """A step of 12 parallel calls adds 25 blocks: Kiln's third breakpoint (where the previous
    request ended) is what lets the next request read the whole previous one."""
    calls = {
        "tool_calls": [{"name": "read_file", "input": {"path": f"m{n}.py"}} for n in range(12)]
    }
    with WireServer(["first", calls, "done"]) as srv:
        model = AnthropicModel(base_url=srv.url, api_key="k")
        history = [user_message("hello " * 800)]
        one = (await collect(model.stream(make_request(*history))))[-1]
        history += [one.message, user_message("read them all")]
        two = (await collect(model.stream(make_request(*history))))[-1]
        results = [
            {"type": "tool_result", "tool_use_id": b["id"], "content": "x = 1\n" * 20}
            for b in two.message["content"]
            if b["type"] == "tool_use"
        ]
        history += [two.message, {"role": "user", "content": results}]
        three = (await collect(model.stream(make_request(*history))))[-1]
    assert len(results) == 12
    previous = two.usage.cache_read_tokens + two.usage.cache_write_tokens + two.usage.input_tokens
    assert three.usage.cache_read_tokens >= previous - 8
