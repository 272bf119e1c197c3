"""A prompt larger than the model's whole context window (docs/acp.md, Errors): refused with
-32602 before anything is stored or sent. It was sent to the model, refused there as too long,
and kept in the transcript, so every later turn of the session failed the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import RequestError

from agent.testing.wire_server import WireServer
from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


async def test_a_prompt_larger_than_the_context_window_is_refused_and_not_kept(
    spawn, workspace: Path
) -> None:
    pasted = "word " * 1_000_000  # ~1.25M tokens; the model's window is 200k
    too_long = {"error": 400, "message": "prompt is too long: 1250000 tokens > 200000 maximum"}
    steps = [{"match": "word word", **too_long},
             {"match": "a small question", "text": "The small one is answered."}]  # fmt: skip
    with WireServer(steps) as wire:
        env = {"KILN_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": wire.url,
               "ANTHROPIC_API_KEY": "test-key"}  # fmt: skip
        async with spawn([], EditorClient(), **env) as agent:
            await agent.start()
            sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
            with pytest.raises(RequestError) as refused:
                await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": pasted}])
            assert refused.value.code == -32602
            message = str(refused.value)
            assert "context window" in message and "\n" not in message, message
            small = [{"type": "text", "text": "a small question"}]
            result = await agent.conn.prompt(session_id=sid, prompt=small)
            assert result.stop_reason == "end_turn"
            assert agent.client.text() == "The small one is answered."
        sent = wire.bodies("/v1/messages")
        assert len(sent) == 1 and "word word" not in json.dumps(sent)
