from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
from pathlib import Path

import pytest

from skills_registry.deferred import DeferredTool, ToolCatalog, load_sidecar_tools, qualify
from skills_registry.errors import ToolCallError
from skills_registry.mcp_config import shown_name
from skills_registry.skill import load_skill
from skills_registry.tool_search import render_tool_search_description, tokenize
from tests.waiting import processes_with, until

from .conftest import FIXTURES

TOOLBOX = FIXTURES / "sidecar" / "toolbox"


def toolbox(**limits: float) -> dict[str, DeferredTool]:
    warnings: list[str] = []
    tools = load_sidecar_tools(load_skill(TOOLBOX), warnings=warnings, **limits)  # type: ignore[arg-type]
    assert len(warnings) == 2
    assert any("outside the skill folder" in w for w in warnings)
    assert any("broken.json" in w for w in warnings)
    return {t.tool_name: t for t in tools}


async def test_sidecar_echo_receives_json_on_stdin() -> None:
    tool = toolbox()["echo"]
    assert tool.name == "toolbox__echo" and tool.source == "skill:toolbox"
    assert await tool.call({"text": "hé"}) == '{"echo": {"text": "h\\u00e9"}}\n'


async def test_missing_required_argument_is_a_clear_error() -> None:
    with pytest.raises(ToolCallError, match="missing required argument"):
        await toolbox()["echo"].call({})


async def test_hanging_script_times_out() -> None:
    with pytest.raises(ToolCallError, match=r"timed out after 0.5s") as info:
        await toolbox(timeout=0.5)["hang"].call({"text": "x"})
    assert info.value.hint


async def test_flooding_script_is_capped() -> None:
    out = await toolbox(output_cap=1000, timeout=20)["flood"].call({"text": "x"})
    assert out == "x" * 1000 + "\n[output truncated at 1000 bytes]"


async def test_failing_script_reports_status_and_stderr_tail() -> None:
    with pytest.raises(ToolCallError) as info:
        await toolbox()["fail"].call({"text": "x"})
    message = str(info.value)
    assert "exited with status 3" in message and message.endswith("database is locked")
    assert len(message) < 2200


def test_catalog_search_namespaces_and_description() -> None:
    catalog = ToolCatalog()
    skill = load_skill(TOOLBOX)
    assert len(catalog.add_skill(skill)) == 2
    assert len(catalog) == 4
    assert [t.name for t in catalog.search("flood output", k=1)] == ["toolbox__flood"]
    assert catalog.search("toolbox__hang", k=1)[0].name == "toolbox__hang"
    assert catalog.search("zzz-nothing") == []
    assert catalog.namespaces() == {"toolbox": skill.description}
    text = render_tool_search_description(catalog.namespaces())
    assert text == render_tool_search_description(dict(catalog.namespaces()))
    assert text.splitlines()[-2:] == ["Namespaces:", f"- toolbox: {skill.description}"]
    assert catalog.get("toolbox__echo") is not None and catalog.get("echo") is None


def test_qualified_names_are_api_safe() -> None:
    assert qualify("github", "create_issue") == "github__create_issue"
    weird = qualify("日本語", "do.thing")
    assert weird.isascii() and "__" in weird and len(weird) <= 64
    assert (
        qualify("a" * 60, "b" * 60) != qualify("a" * 60, "b" * 59)
        and len(qualify("a" * 60, "b" * 60)) == 64
    )


def test_a_name_ending_in_a_newline_is_no_plain_name() -> None:
    """`$` matches before a final newline: `srv\n` passed as plain, so a tool name sent to the
    provider held a newline (refused) and a status line naming the server broke in two."""
    assert "\n" not in qualify("srv\n", "tool\n") and qualify("srv\n", "t") != qualify("srv", "t")
    assert shown_name("srv\n") == '"srv\\n"' and shown_name("srv") == "srv"


def test_tokenizer_splits_identifiers() -> None:
    assert tokenize("gh__createIssue") == ["gh", "create", "issue"]
    assert tokenize("The list of HTTPServers") == ["list", "http", "servers"]


def test_fts5_porter_ranking_meets_inflections_and_synonyms() -> None:
    catalog = ToolCatalog()
    schema = {"type": "object", "properties": {"title": {"type": "string"}}}
    for name, desc in (
        ("create_issue", "Open a new issue in a repository."),
        ("list_issues", "List issues of a repository."),
        ("delete_branch", "Delete a git branch."),
    ):
        catalog.add(DeferredTool(qualify("gh", name), "gh", desc, schema, "mcp:gh", name))
    assert catalog.search("creating issues", k=1)[0].name == "gh__create_issue"
    assert catalog.search("add an issue", k=1)[0].name == "gh__create_issue"  # synonym
    assert catalog.search("remove branches", k=1)[0].name == "gh__delete_branch"
    assert catalog.search('quote " OR NEAR(', k=3) == []  # operators are words, not syntax


def write_tool(skill: Path, name: str, command: str, script: str | None = None) -> None:
    (skill / "tools").mkdir(parents=True, exist_ok=True)
    spec = {"name": name, "description": f"{name} tool", "command": command}
    (skill / "tools" / f"{name}.json").write_text(json.dumps(spec))
    if script is not None:
        (skill / command).parent.mkdir(parents=True, exist_ok=True)
        (skill / command).write_text(script)


async def test_scripts_do_not_see_secret_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    skill = tmp_path / "envcheck"
    write_tool(
        skill, "env", "scripts/env.py", "import json, os\nprint(json.dumps(sorted(os.environ)))\n"
    )
    (tool,) = load_sidecar_tools(skill)
    names = json.loads(await tool.call({}))
    assert "PLAIN_SETTING" in names and "KILN_SKILL_DIR" in names and "GITHUB_TOKEN" not in names


async def test_unrunnable_command_is_a_clear_error(tmp_path: Path) -> None:
    skill = tmp_path / "norun"
    write_tool(skill, "data", "assets/data.bin", "not a program")
    (tool,) = load_sidecar_tools(skill)
    with pytest.raises(ToolCallError, match=r"norun__data: cannot start .*data.bin") as info:
        await tool.call({})
    assert "executable" in info.value.hint


@pytest.mark.parametrize("when", ["starting", "running"])
async def test_a_cancelled_call_ends_the_script_and_what_it_started(
    tmp_path: Path, when: str
) -> None:
    """A turn cancelled while a sidecar tool's script starts or runs ends its process group, and
    the call ends. Before, a running script ran on, with what it started (and could still write
    after the call was over); one cancelled as it started hung the call as long as they ran."""
    marker = f"4{os.getpid()}.{random.randrange(10**6)}"  # a `sleep` of weeks
    skill = tmp_path / "stay"
    write_tool(skill, "stay", "scripts/stay.sh", f"sleep {marker} &\nsleep {marker}\n")
    (tool,) = load_sidecar_tools(skill, timeout=600)
    call = asyncio.ensure_future(tool.call({}))
    try:
        if when == "starting":
            await asyncio.sleep(0)  # the call is inside its spawn's await
        else:
            await until(lambda: len(processes_with(f"sleep {marker}", leading=True)) >= 2)
        call.cancel()
        done, _ = await asyncio.wait([call], timeout=30)  # bounds a hang, not a speed
        assert done and call.cancelled()
        assert processes_with(marker) == []
    finally:
        for pid in processes_with(marker):  # before the fix: end them, not leave them running
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
