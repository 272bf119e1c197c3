"""Deferred tools across `kiln run --resume` on Anthropic: a resumed process declares the tools
the session declared before, in the same order and bytes, whatever changed on disk in between
(a skill installed that sorts first, a skill removed); otherwise the tools list and an earlier
``tool_reference`` are rewritten and the prompt cache misses from there on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns, as_sent, breaks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def add_skill(root: Path, name: str, tool: str) -> None:
    tools = root / ".kiln" / "skills" / name / "tools"
    tools.mkdir(parents=True)
    (tools.parent / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {name} chores.\n---\nx\n"
    )
    (tools / "run.py").write_text("print('ran')\n")
    spec = {"name": tool, "description": f"{tool.title()} the chores.", "command": "tools/run.py"}
    (tools / f"{tool}.json").write_text(json.dumps(spec))


def declared(raw: bytes) -> list[str]:
    return [t["name"] for t in as_sent(raw).get("tools", []) if t.get("defer_loading")]


def test_resume_keeps_declared_tools_in_place(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    add_skill(root, "zeta", "plan")
    script = [{"tool_calls": [{"name": "tool_search", "input": {"query": "plan chores"}}]},
              "found it", "two", "three",
              {"tool_calls": [{"name": "zeta__plan", "input": {}}]}, "five"]  # fmt: skip
    with WireServer(script) as server:
        runs = KilnRuns(tmp_path, server)
        runs.turn(root, "find the planner")
        add_skill(root, "alpha", "check")  # sorts before zeta
        runs.turn(root, "after a skill was installed")
        shutil.rmtree(root / ".kiln" / "skills" / "zeta")  # the found tool's skill is gone
        runs.turn(root, "after the skill was removed")
        runs.turn(root, "call the planner")
        raws = runs.raws()
    assert [declared(r) for r in raws] == [
        ["zeta__plan"], ["zeta__plan"],
        ["zeta__plan", "alpha__check"],  # appended, not sorted in
        ["zeta__plan", "alpha__check"],  # still declared: the reference below loads it
        ["zeta__plan", "alpha__check"], ["zeta__plan", "alpha__check"],
    ]  # fmt: skip
    assert breaks(raws) == []
    loads = as_sent(raws[1])["messages"][2]["content"][0]
    assert loads["content"] == [{"type": "tool_reference", "tool_name": "zeta__plan"}]
    # calling a tool whose skill is gone is an error that says so, not a crash
    result = as_sent(raws[-1])["messages"][-1]["content"][0]
    assert result["is_error"] and "no longer available" in json.dumps(result)


def test_an_mcp_server_that_no_longer_starts_keeps_its_found_tool_declared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.cache_stability_session import add_mcp_server

    root = tmp_path / "ws"
    (root / ".kiln").mkdir(parents=True)
    monkeypatch.setenv("KILN_HOME", str(tmp_path / "home"))  # where the approval is recorded
    add_mcp_server(root)
    script = [{"tool_calls": [{"name": "tool_search", "input": {"query": "search team notes"}}]},
              "found", "two",
              {"tool_calls": [{"name": "notes__search_notes", "input": {"query": "deploy"}}]},
              "three"]  # fmt: skip
    with WireServer(script) as server:
        runs = KilnRuns(tmp_path, server)
        runs.turn(root, "find the notes tool")
        (root / ".kiln" / "mcp_notes.py").write_text("import sys\nsys.exit(3)\n")
        runs.turn(root, "after the server broke")
        runs.turn(root, "search the notes")
        raws = runs.raws()
    assert [declared(r) for r in raws] == [["notes__search_notes"]] * 5
    assert breaks(raws) == []
    result = as_sent(raws[-1])["messages"][-1]["content"][0]
    assert result["is_error"] and "no longer available" in json.dumps(result)
