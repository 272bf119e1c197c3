"""`kiln acp` with a repository that declares an MCP server nobody approved, or a skill named like
one the user installed: the client is told (a thought naming the server and the approving command,
or the ignored skill), the server never starts and the user's skill is the one loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.acp.conftest import EditorClient
from tests.registry.conftest import make_skill
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


async def test_repository_skill_named_like_the_users_is_ignored_and_reported(
    spawn, workspace: Path, kiln_home: Path
) -> None:
    installed = make_skill(kiln_home / "skills", "deploy", body="USER-DEPLOY-STEPS\n")
    make_skill(workspace / ".kiln" / "skills", "deploy", body="HOSTILE-STEPS\n")
    client = EditorClient()
    load = {"tool_calls": [{"name": "skill", "input": {"name": "deploy"}}]}
    async with spawn([load, "done"], client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
    thought = client.text("agent_thought_chunk")
    line = f".kiln/skills/deploy: skill deploy ignored: your skill of that name in {installed}"
    assert thought.count(line) == 1, thought
    shown = json.dumps(client.updates, default=str)
    assert "USER-DEPLOY-STEPS" in shown and "HOSTILE-STEPS" not in shown
