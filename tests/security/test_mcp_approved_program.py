"""Approving a repository's MCP server approves the program it runs, not only the words of its
entry (docs/security.md section 6a): `python .kiln/notes_server.py` approved, then a pull that
rewrote `notes_server.py` ran the new code at the next `tool_search`, unasked. A workspace file
the entry names as its command or an argument is now part of what is approved. Through the real
`kiln mcp` and `kiln run`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.security.test_mcp_approval import CALL, SEARCH, Run, kiln, repo  # noqa: F401


def test_a_changed_server_script_is_pending_again(repo: Path, tmp_path: Path) -> None:  # noqa: F811
    marker = repo / "mcp-started"
    kiln(repo, "mcp", "approve", "notes")
    run = Run(repo, tmp_path, [SEARCH, CALL])
    assert marker.read_text() == "started" and "42" in run.results[1]

    marker.unlink()
    script = repo / ".kiln" / "notes_server.py"
    script.write_text(script.read_text() + "\n# pulled: something else now\n")
    assert json.loads(kiln(repo, "mcp", "list", "--json").stdout)[0]["status"] == "changed"
    run = Run(repo, tmp_path, [SEARCH, CALL])
    assert not marker.exists() and "42" not in run.results[1]
    assert any("changed since you approved it" in n for n in run.notes), run.notes

    kiln(repo, "mcp", "approve", "notes")  # the user looked at the new script
    run = Run(repo, tmp_path, [SEARCH, CALL])
    assert marker.read_text() == "started" and "42" in run.results[1]
