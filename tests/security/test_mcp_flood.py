"""A repository's `.kiln/mcp.json` naming thousands of servers (docs/security.md section 6a).
None starts unapproved, and each was reported on its own line: 30,000 lines on the terminal (or
as many `status` updates to the editor) at every session start, burying the lines that matter.
The host shows 20, then how many more. Through the real `kiln run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.security.scripted_run import kiln_run

pytestmark = pytest.mark.e2e


def test_a_flood_of_unapproved_servers_is_summed_up(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    (root / ".kiln").mkdir(parents=True)
    servers = {f"s{i}": {"command": "python3", "args": ["srv.py"]} for i in range(5_000)}
    (root / ".kiln" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "tool_search", "input": {"query": "notes"}}]}, "done",
    ]))  # fmt: skip
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, output="text")
    assert proc.returncode == 0, proc.stderr
    lines = (proc.stdout + proc.stderr).splitlines()
    assert len([line for line in lines if "not approved for this workspace" in line]) == 20
    assert any(line.startswith("… and 4980 more MCP servers not started") for line in lines)
