"""Permission rules name MCP tools as Claude Code does (docs/security.md section 3):
`mcp__SERVER` covers every tool of that server. Such a deny rule, copied from Claude Code's
settings, matched nothing, so the server's tools ran even in a mode that asks for nothing.
Through `kiln run` with a real stdio server (`tests/skills/hostile_mcp.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.skills.test_mcp_hostile import SEARCH, run, server

CALL = {"tool_calls": [{"name": "call_tool",
                        "input": {"name": "h__echo", "arguments": {"text": "ran"}}}]}  # fmt: skip


@pytest.mark.parametrize(
    ("rules", "ran"),
    [
        ({"deny": ["mcp__h"]}, False),
        ({"deny": ["mcp__other"]}, True),
        ({"deny": ["mcp__h__echo"]}, False),
    ],
)
def test_a_claude_style_server_rule_covers_its_tools(
    tmp_path: Path, kiln_home: Path, rules: dict[str, list[str]], ran: bool
) -> None:
    (kiln_home / "settings.json").write_text(json.dumps({"permissions": rules}))
    _, [_, called] = run(
        tmp_path, kiln_home, {"h": server("plain")}, [SEARCH, CALL], exit_code=0 if ran else 5
    )  # 5: the run had a refusal
    assert ("ran" in called and "PermissionDenied" not in called) == ran, called
    if not ran:
        assert f"denied by rule {rules['deny'][0]}" in called
