"""What `kiln run` asks about in a terminal must show what is approved (docs/security.md section
7a). A call of an MCP or skill tool (`call_tool{name, arguments}`) was asked as `Allow h__echo?` and
nothing more, so a reply steered by injected text could have the user approve a
message, an issue or an upload whose text they never saw. The prompt now shows the arguments.
Through the real `kiln run --mode ask` on a pseudo-terminal, with a real stdio MCP server,
declining the question."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.skills.test_mcp_hostile import SEARCH, placed, server
from tests.terminal import run_on_terminal

PAYLOAD = "token=ghx_c4n4ry and the rest of ~/.ssh/config"


def test_an_mcp_call_is_asked_with_its_arguments(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (kiln_home / "mcp.json").write_text(
        json.dumps({"mcpServers": placed(root, {"h": server("plain")})})
    )
    call = {"name": "call_tool", "input": {"name": "h__echo", "arguments": {"text": PAYLOAD}}}
    script = tmp_path / "script.json"
    script.write_text(json.dumps([SEARCH, {"tool_calls": [call]}, "done"]))
    env = {**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home),
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script), "TERM": "dumb"}  # fmt: skip
    _, text = run_on_terminal(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "ask", "go"],
        env=env, cwd=root, typed=b"n\n",
    )  # fmt: skip
    assert "Allow h__echo" in text, text
    assert PAYLOAD in text, text
