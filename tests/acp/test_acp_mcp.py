"""`kiln acp` with a repository that declares an MCP server nobody approved: the client is told
(a thought naming the server and the approving command) and the server never starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.acp.conftest import EditorClient
from tests.security.test_mcp_approval import SEARCH, marked_entry, write_marked_server

pytestmark = pytest.mark.e2e


async def test_pending_project_server_is_reported_not_started(spawn, workspace: Path) -> None:
    write_marked_server(workspace)
    config = {"mcpServers": {"notes": marked_entry(workspace)}}
    (workspace / ".kiln" / "mcp.json").write_text(json.dumps(config))
    client = EditorClient()
    async with spawn([SEARCH, "done"], client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
    thought = client.text("agent_thought_chunk")
    assert "MCP server notes from .kiln/mcp.json not started" in thought, thought
    assert f"kiln mcp approve notes --root {workspace}" in thought
    assert not (workspace / "mcp-started").exists()
