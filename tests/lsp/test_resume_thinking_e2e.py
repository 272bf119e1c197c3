"""A loaded session shows what the live one showed: a reasoning model's thinking (streamed as
``agent_thought_chunk``, never sent back to the model) is replayed before the answer it came
with. The real ``openai`` SDK against the wire server, two ``kiln lsp`` processes in turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.testing.wire_server import WireServer
from tests.lsp.conftest import running, server_env
from tests.providers.test_compatible_servers import chunk

pytestmark = pytest.mark.e2e


def stream(*deltas: dict[str, Any]) -> dict[str, Any]:
    return {"raw": {"frames": [*(chunk(d) for d in deltas), chunk(finish="stop"), "data: [DONE]"]}}


async def test_a_loaded_session_shows_its_thinking_again(workspace: Path, kiln_home: Path) -> None:
    with WireServer() as wire:
        wire.enqueue(
            stream({"role": "assistant", "reasoning_content": "THOUGHT-ONE the user "},
                   {"reasoning_content": "wants a greeting"}, {"content": "Hello!"}),
            stream({"content": "Second answer, no thinking."}),
            stream({"content": "After the load."}),
        )  # fmt: skip
        env = server_env(kiln_home, KILN_PROVIDER="openai", OPENAI_API_KEY="k",
                         OPENAI_BASE_URL=wire.openai_base_url)  # fmt: skip
        async with running(workspace, env) as editor:
            sid = (await editor.request("kiln/session/new", {}))["sessionId"]
            for text in ("greet me", "and again"):
                done = await editor.request(
                    "kiln/session/prompt", {"sessionId": sid, "prompt": text}
                )
                assert done["stopReason"] == "end_turn"
            live = [u["sessionUpdate"] for u in editor.updates_for(sid)]
            assert "agent_thought_chunk" in live

        async with running(workspace, env) as editor:
            await editor.request("kiln/session/load", {"sessionId": sid})
            replayed = [
                (u["sessionUpdate"], u["content"]["text"])
                for u in editor.updates_for(sid)
                if u["sessionUpdate"].endswith("_chunk")
            ]
            assert replayed == [
                ("user_message_chunk", "greet me"),
                ("agent_thought_chunk", "THOUGHT-ONE the user wants a greeting"),
                ("agent_message_chunk", "Hello!"),
                ("user_message_chunk", "and again"),
                ("agent_message_chunk", "Second answer, no thinking."),
            ]
            done = await editor.request(
                "kiln/session/prompt", {"sessionId": sid, "prompt": "once more"}
            )
            assert done["stopReason"] == "end_turn"
        # The thinking was shown and stored, never sent back to the model.
        sent = wire.bodies("/v1/chat/completions")
        assert len(sent) == 3 and "THOUGHT-ONE" not in json.dumps(sent)
