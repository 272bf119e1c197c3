from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.config import AgentConfig
from agent.errors import ToolError
from agent.permissions import Permissions
from agent.protocols import ToolContext
from agent.tools.skill_tools import (
    SkillsContext,
    SkillTool,
    ToolSearchTool,
    kiln_tool_names,
)
from skills_registry.discovery import kiln_home_dir
from skills_registry.mcp_trust import approve, plan_servers

from .conftest import FIXTURES, SkillFactory


class Turn:
    number = 1


class Session:
    """The seams the skill tools touch on a live session, recorded for assertions: the real
    permissions, the turn number and state an extension sees, and tool announcements."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state: dict[str, Any] = {}
        self.turn = Turn()
        self.model = None  # no native tool search
        self.config = AgentConfig()
        self.permissions = Permissions()
        self.announced: list[str] = []

    def announce_tools(self, tools: list[Any]) -> list[Any]:
        self.announced.extend(t.name for t in tools)
        return tools

    def read_denied(self, path: str | Path) -> bool:
        return self.permissions.read_denied(str(path))


@pytest.fixture
def project(tmp_path: Path, make_skill: SkillFactory) -> Path:
    skills = tmp_path / ".kiln" / "skills"
    shutil.copytree(FIXTURES / "sidecar" / "toolbox", skills / "toolbox")
    shutil.copytree(FIXTURES / "anthropic" / "internal-comms", skills / "internal-comms")
    make_skill(
        skills,
        "release",
        frontmatter="name: release\ndescription: Cut a release.\nallowed-tools: Read Bash(git tag:*)\n",
    )
    return tmp_path


def ctx_for(session: Session) -> ToolContext:
    return ToolContext(root=session.root, session=session, call_id="c1")


async def test_skill_tool_loads_body_and_activates_allowed_tools(project: Path) -> None:
    session = Session(project)
    context = SkillsContext(
        project, permissions=session.permissions, home=project / "home", start_mcp=False
    )
    tool = SkillTool(context.catalog, on_activate=context.activate)
    assert tool.spec.name == "skill" and "Example:" in tool.spec.description
    text = await tool.run({"name": "release"}, ctx_for(session))
    assert text.startswith('<skill name="release"') and "# Steps" in text
    assert session.permissions.skill_allowed == {"Read", "read_file", "Bash(git tag:*)"}
    comms = await tool.run({"name": "internal-comms"}, ctx_for(session))
    assert "examples/3p-updates.md" in comms and session.permissions.skill_allowed == set()
    example = await tool.run(
        {"name": "internal-comms", "file": "examples/3p-updates.md"}, ctx_for(session)
    )
    # a bundled file is data, wrapped like read_file wraps it, whoever wrote the skill
    shipped = (FIXTURES / "anthropic" / "internal-comms" / "examples" / "3p-updates.md").read_text()
    assert example.startswith(
        '<external_content source="skill:internal-comms/examples/3p-updates.md">'
    )
    assert shipped.strip() in example


async def test_skill_tool_errors_suggest_fixes(project: Path) -> None:
    session = Session(project)
    tool = SkillTool(SkillsContext(project, home=project / "home", start_mcp=False).catalog)
    with pytest.raises(ToolError) as info:
        await tool.run({"name": "relase"}, ctx_for(session))
    assert info.value.suggestion == "did you mean release?"
    with pytest.raises(ToolError, match="outside skill"):
        await tool.run({"name": "release", "file": "../toolbox/SKILL.md"}, ctx_for(session))
    with pytest.raises(ToolError, match="invalid arguments"):
        await tool.run({}, ctx_for(session))


async def test_tool_search_announces_matches(project: Path) -> None:
    session = Session(project)
    context = SkillsContext(project, home=project / "home", start_mcp=False)
    search = ToolSearchTool(context.tool_catalog)
    empty = ToolSearchTool(SkillsContext(project / "home", start_mcp=False).tool_catalog)
    assert search.spec == empty.spec  # the definition does not depend on what is installed
    found = await search.run({"query": "echo some text"}, ctx_for(session))
    assert found.text.splitlines()[1] == "- name: toolbox__echo"
    assert '"required": ["text"]' in found.text  # the schema travels in the result
    assert found.references[0] == "toolbox__echo"
    assert session.announced[0] == "toolbox__echo"
    none = await search.run({"query": "kubernetes pods"}, ctx_for(session))
    assert none.startswith("No deferred tool matches 'kubernetes pods'")


async def test_catalog_tail_block_only_when_changed(
    project: Path, make_skill: SkillFactory
) -> None:
    session = Session(project)
    context = SkillsContext(project, home=project / "home", start_mcp=False)
    first = context.tail_block(session)
    assert (
        first is not None and first.startswith("<skills>") and "- release: Cut a release." in first
    )
    assert context.tail_block(session) is None
    make_skill(project / ".kiln" / "skills", "hotfix", "Patch production.")
    again = context.tail_block(session)
    assert again is not None and "- hotfix: Patch production." in again


def test_kiln_tool_names_never_widen_patterns() -> None:
    assert kiln_tool_names(["Bash(git:*)", "Grep", "mcp__x"]) == {
        "Bash(git:*)",
        "Grep",
        "grep",
        "mcp__x",
    }


@pytest.mark.slow
async def test_make_tools_with_mcp_config(project: Path) -> None:
    server = Path(__file__).with_name("mcp_server.py")
    config = {"mcpServers": {"notes": {"command": sys.executable, "args": [str(server)]}}}
    (project / ".kiln" / "mcp.json").write_text(json.dumps(config))
    notes = plan_servers(project).project("notes")
    assert notes is not None
    approve(kiln_home_dir(), project, [notes.config])  # a repository's server needs approval
    session = Session(project)
    context = SkillsContext(project)
    skill_tool, search, proxy = context.tools()
    try:
        assert proxy.spec.name == "call_tool"
        assert "MCP servers: notes" in (context.tail_block(session) or "")
        found = await search.run({"query": "add two numbers"}, ctx_for(session))
        assert "- name: notes__add_numbers" in found.text
        # an MCP server's description is third-party text: wrapped as external content
        assert '  description: <external_content source="mcp:notes">' in found.text
        tool = context.tool_catalog.get("notes__add_numbers")
        assert tool is not None and await tool.call({"a": 1, "b": 2}) == "3"
    finally:
        await context.aclose()


async def test_allowed_tools_last_until_the_next_turn(project: Path) -> None:
    session = Session(project)
    session.turn.number = 1
    context = SkillsContext(
        project, permissions=session.permissions, home=project / "home", start_mcp=False
    )
    tool = SkillTool(context.catalog, on_activate=context.activate)
    await context.before_request(session)  # type: ignore[arg-type]  # the step that calls it
    await tool.run({"name": "release"}, ctx_for(session))
    context.tail_block(session)  # same turn: tool results come back
    assert "read_file" in session.permissions.skill_allowed
    session.turn.number = 2
    context.tail_block(session)  # the next user turn begins
    assert session.permissions.skill_allowed == set()
