"""What `kiln run` asks about in a terminal must show what is approved (docs/security.md section
7a). A call of an MCP or skill tool (`call_tool{name, arguments}`) was asked as `Allow h__echo?` and
nothing more, so a reply steered by injected text could have the user approve a
message, an issue or an upload whose text they never saw. The prompt now shows the arguments.
Through the real `kiln run --mode ask` on a pseudo-terminal, with a real stdio MCP server,
declining the question."""

from __future__ import annotations

import json
from pathlib import Path

from tests.security.test_prompt_terminal import ask_on_terminal
from tests.skills.test_mcp_hostile import SEARCH, placed, server

PAYLOAD = "token=ghx_c4n4ry and the rest of ~/.ssh/config"


def test_an_mcp_call_is_asked_with_its_arguments(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (kiln_home / "mcp.json").write_text(
        json.dumps({"mcpServers": placed(root, {"h": server("plain")})})
    )
    call = {"name": "call_tool", "input": {"name": "h__echo", "arguments": {"text": PAYLOAD}}}
    text = ask_on_terminal(
        tmp_path, kiln_home, root, [SEARCH, {"tool_calls": [call]}, "done"], b"n\n"
    )
    assert "Allow h__echo" in text, text
    assert PAYLOAD in text, text
