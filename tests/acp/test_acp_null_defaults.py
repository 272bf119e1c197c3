"""Fields ACP's schema reads as their default when a client sends ``null``
(``x-deserialize-default-on-null``), through the real `kiln acp` over raw frames: the official
SDKs read ``"mcpServers": null`` as ``[]``, so a client built on one may send it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.acp.test_acp_meta import RawAcp

pytestmark = pytest.mark.e2e


async def test_null_mcp_servers_mean_none_in_session_new_and_load(
    workspace: Path, kiln_home: Path, tmp_path: Path
) -> None:
    """`session/new` and `session/load` with `"mcpServers": null` were refused -32602
    ("mcpServers: Input should be a valid list"); they are now sessions without servers."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["First answer."]))
    async with RawAcp(kiln_home, KILN_SCRIPT=str(script)) as acp:
        await acp.call("initialize", {"protocolVersion": 1})
        new = await acp.call("session/new", {"cwd": str(workspace), "mcpServers": None})
        assert "result" in new, new
        session_id = new["result"]["sessionId"]
        prompt = [{"type": "text", "text": "hello"}]
        answer = await acp.call("session/prompt", {"sessionId": session_id, "prompt": prompt})
        assert answer["result"] == {"stopReason": "end_turn"}, answer
    async with RawAcp(kiln_home, KILN_SCRIPT=str(script)) as acp:
        await acp.call("initialize", {"protocolVersion": 1})
        params = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": None}
        loaded = await acp.call("session/load", params)
        assert "result" in loaded, loaded
    updates = [n["params"]["update"] for n in acp.notes if n.get("method") == "session/update"]
    replayed = [u for u in updates if u["sessionUpdate"] != "available_commands_update"]
    assert [u["content"]["text"] for u in replayed] == ["hello", "First answer."], replayed
