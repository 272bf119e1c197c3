"""Streams that end cleanly but short of their last events, through the real SDKs against the
wire server: a reply whose stop reason arrived is whole (a proxy that drops ``message_stop`` or
``[DONE]`` loses nothing), one whose stop reason never came is not."""

from __future__ import annotations

from typing import Any

import pytest

from agent.errors import ServerError
from agent.providers.anthropic import AnthropicModel
from agent.providers.openai import OpenAIModel
from agent.providers.retry import PartialReplyError, RetryPolicy
from agent.testing.wire_server import WireServer
from agent.types import ModelReply
from tests.providers.conftest import SleepRecorder
from tests.providers.helpers import collect, make_request, track

CALL = {"text": "Reading it.", "tool_calls": [{"name": "read_file", "input": {"path": "a.py"}}]}


def model(api: str, srv: WireServer, waits: SleepRecorder) -> Any:
    policy = RetryPolicy(sleep=waits)
    if api == "anthropic":
        return track(AnthropicModel(api_key="k", base_url=srv.url, retry=policy))
    return track(OpenAIModel(api_key="k", base_url=srv.openai_base_url, retry=policy))


@pytest.mark.parametrize(
    ("api", "drop"),
    [("anthropic", 1), ("openai", 1), ("openai", 2)],  # message_stop; [DONE]; usage and [DONE]
)
async def test_a_reply_whose_stop_reason_came_is_whole(
    wire: WireServer, waits: SleepRecorder, api: str, drop: int
) -> None:
    """Before, Anthropic's complete reply without ``message_stop`` was a broken one: the text
    kept as partial, the tool call thrown away."""
    wire.enqueue({**CALL, "drop_last": drop})
    items = await collect(model(api, wire, waits).stream(make_request()))
    reply = items[-1]
    assert isinstance(reply, ModelReply) and reply.stop_reason == "tool_use"
    blocks = reply.message["content"]
    assert blocks[0] == {"type": "text", "text": "Reading it."}
    assert blocks[1]["name"] == "read_file" and blocks[1]["input"] == {"path": "a.py"}
    assert len(wire.bodies()) == 1 and waits.waits == []


@pytest.mark.parametrize(("api", "drop"), [("anthropic", 3), ("openai", 3)])
async def test_a_reply_without_its_stop_reason_is_broken(
    wire: WireServer, waits: SleepRecorder, api: str, drop: int
) -> None:
    """Without the stop reason (and, on Anthropic, the last block's end) the reply may be cut."""
    wire.enqueue({**CALL, "drop_last": drop})
    with pytest.raises(PartialReplyError) as info:
        await collect(model(api, wire, waits).stream(make_request()))
    assert isinstance(info.value.__cause__, ServerError)
    assert info.value.partial_text == "Reading it."
