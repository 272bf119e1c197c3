"""An editor that switches the permission mode (session/set_mode) has the model hear the new mode
at the tail of its next message, even before the first prompt, once; the environment block the
session began with is never rewritten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


async def test_set_mode_reaches_the_model_once(spawn, workspace: Path) -> None:
    with WireServer(["one", "two"]) as wire:
        env = {"KILN_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": wire.url,
               "ANTHROPIC_API_KEY": "test", "KILN_ACP_MODE": "ask"}  # fmt: skip
        async with spawn([], EditorClient(), **env) as agent:
            await agent.start()
            sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
            await agent.conn.set_session_mode(session_id=sid, mode_id="auto-edit")
            for text in ("first", "second"):
                await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": text}])
        first, second = (json.dumps(b) for b in wire.bodies("/v1/messages"))
    assert "permission_mode: ask" in first
    assert first.count("permission_mode: auto-edit") == 1
    assert first.index("permission_mode: auto-edit") < first.index("first")
    assert second.count("permission_mode: auto-edit") == 1
