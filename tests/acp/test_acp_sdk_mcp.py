"""The editor's MCP servers (``mcpServers`` of ``session/new``) through the official ACP
TypeScript SDK, every frame checked against the schema (``tests/acp/sdk_client``), with the
scripted wire server behind the real Anthropic SDK: the model calls the server's tool, the tool
runs in a real stdio MCP server process, and its result reaches the model as external content.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.acp.sdk_runner import Conformance, call
from tests.acp.test_acp_client_mcp import processes_running, recorded, recording_server

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def stdio_entry(root: Path, name: str = "notes") -> dict[str, Any]:
    """ACP's stdio entry for the recording notes server."""
    script = recording_server(root)
    return {
        "name": name,
        "command": sys.executable,
        "args": [str(script), str(root / "client-started")],
        "env": [{"name": "KILN_TEST_TOKEN", "value": "from-the-editor"}],
    }


def test_the_editors_stdio_server_serves_the_model(conformance: Conformance) -> None:
    root = conformance.workspace
    entry = stdio_entry(root)
    steps = [call("notes__add_numbers", a=2, b=40), "The sum is 42."]
    malformed = [
        [{**entry, "command": "python3"}],  # ACP: an absolute path
        [entry, {**entry, "args": []}],  # one name twice
        [{**entry, "env": {"KILN_TEST_TOKEN": "x"}}],  # env is a list of {name, value}
        [{"type": "sse", "name": "s", "url": "ws://127.0.0.1:9/", "headers": []}],
    ]
    report = conformance.run("mcp", steps, mcpServers=[entry], answers=["allow_once"],
                             malformed=malformed)  # fmt: skip
    result = report.result
    assert result["mcpCapabilities"] == {"http": True, "sse": True}
    assert result["response"] == {"stopReason": "end_turn"}
    # In the sandbox (the Anthropic provider starts servers before the first request, outside
    # any tool call: the session's launcher still applies), with its env as sent.
    assert recorded(root) == {"token": "from-the-editor", "sees_host_tmp": False, "cwd": str(root)}
    # The call asked like any MCP tool in `ask` mode, then ran: its result reached the model,
    # wrapped as third-party text, and the tool's description was wrapped too.
    [asked] = result["permissions"]
    assert asked["toolCall"]["_meta"]["tool"] == "notes__add_numbers"
    sent = report.sent_to_model()
    assert '<external_content source=\\"tool:notes__add_numbers\\">\\n42' in sent, sent[-3000:]
    tools = [t for body in report.wire.bodies("/v1/messages") for t in body.get("tools", [])]
    [notes_tool] = {t["name"]: t for t in tools if t["name"] == "notes__add_numbers"}.values()
    assert notes_tool["description"].startswith('<external_content source="mcp:notes">')
    assert report.text() == "The sum is 42."
    errors = result["malformed"]
    assert [e["code"] for e in errors] == [-32602] * len(malformed)
    assert "'command' must be an absolute path" in errors[0]["message"]
    assert "appears twice" in errors[1]["message"]
    assert "'env' must be a list of {name, value}" in errors[2]["message"]
    assert "'url' must be an http(s) URL" in errors[3]["message"]
    sessions = result["listed"]["sessions"]
    assert [s["sessionId"] for s in sessions] == [result["sessionId"]]  # nothing else stored
    assert not processes_running(str(root / ".kiln" / "client_server.py"))  # ended with it


def test_the_users_servers_start_in_the_sandbox_on_the_anthropic_path(
    conformance: Conformance, kiln_home: Path
) -> None:
    """With native tool search, servers start before the first model request, outside any tool
    call; they used to start there without the session's launcher, unconfined."""
    root = conformance.workspace
    entry = stdio_entry(root)
    users = {"command": entry["command"], "args": entry["args"]}
    (kiln_home / "mcp.json").write_text(json.dumps({"mcpServers": {"notes": users}}))
    report = conformance.run("prompt", ["Nothing to do."], text="hello")
    assert report.result["response"] == {"stopReason": "end_turn"}
    assert {**recorded(root), "cwd": ""} == {"token": "unset", "sees_host_tmp": False, "cwd": ""}
