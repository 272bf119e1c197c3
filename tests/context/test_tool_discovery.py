"""Tool discovery that keeps the cache, through the real SDKs against the wire server:
Anthropic declares every deferred tool from the first request and loads found ones with
``tool_reference``; OpenAI-compatible providers keep one fixed ``tools`` list and run found
tools through ``call_tool``. Plus the Anthropic look-back breakpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.providers.anthropic import LOOKBACK_BLOCKS, AnthropicModel, build_params
from agent.providers.openai import OpenAIModel
from agent.session import AgentConfig, DiskHost, Session
from agent.testing.wire_requests import anthropic_tool_problem
from agent.testing.wire_server import WireServer
from agent.types import Request, ToolSpec
from tests.context.conftest import call

PLAN = "import sys\nprint('plan for', sys.stdin.read())\n"


def workspace_with_tools(root: Path) -> Path:
    tools = root / ".kiln" / "skills" / "db" / "tools"
    tools.mkdir(parents=True)
    (tools.parent / "SKILL.md").write_text("---\nname: db\ndescription: Database chores.\n---\nx\n")
    (tools / "plan.py").write_text(PLAN)
    for name, desc in (("plan", "Plan database migrations."), ("lint", "Lint SQL files.")):
        spec = {"name": name, "description": desc, "command": "tools/plan.py",
                "input_schema": {"type": "object", "properties": {"schema": {"type": "string"}},
                                 "required": ["schema"]}}  # fmt: skip
        (tools / f"{name}.json").write_text(json.dumps(spec))
    return root


def proxy(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": "call_tool", "input": {"name": name, "arguments": arguments}}]}


def model_for(api: str, srv: WireServer) -> Any:
    if api == "anthropic":
        return AnthropicModel(base_url=srv.anthropic_base_url, api_key="k")
    return OpenAIModel(base_url=srv.openai_base_url, api_key="k", model="gpt-4o")


async def run(root: Path, api: str, script: list[Any]) -> tuple[Session, list[dict[str, Any]]]:
    with WireServer(script) as srv:
        session = Session.create(
            root, host=DiskHost(), config=AgentConfig(mode="yolo"), model=model_for(api, srv)
        )
        try:
            assert await session.prompt("plan the migrations") == "end_turn", (
                session.transcript.final_text()
            )
        finally:
            await session.aclose()
        path = "/v1/messages" if api == "anthropic" else "/chat/completions"
        return session, srv.bodies(path)


def results(session: Session) -> list[dict[str, Any]]:
    return [
        b
        for m in session.transcript.messages
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


async def test_anthropic_declares_deferred_tools_up_front_and_loads_by_reference(
    tmp_path: Path,
) -> None:
    root = workspace_with_tools(tmp_path / "ws")
    script = [call("tool_search", query="plan database migrations"),
              call("db__plan", schema="public"), "Planned."]  # fmt: skip
    session, bodies = await run(root, "anthropic", script)
    assert len(bodies) == 3
    # the same tools on every request, deferred ones declared from the very first
    assert bodies[0]["tools"] == bodies[1]["tools"] == bodies[2]["tools"]
    deferred = [t["name"] for t in bodies[0]["tools"] if t.get("defer_loading")]
    assert deferred == ["db__lint", "db__plan"]
    assert all(not anthropic_tool_problem(b) for b in bodies)
    # the tool_search result goes out as tool_reference blocks only
    sent = [b for m in bodies[1]["messages"] for b in m["content"] if isinstance(b, dict)]
    found = next(b for b in sent if b.get("type") == "tool_result")
    refs = [{k: v for k, v in r.items() if k != "cache_control"} for r in found["content"]]
    assert refs[0] == {"type": "tool_reference", "tool_name": "db__plan"}
    assert all(r["type"] == "tool_reference" for r in refs)
    assert "plan for" in results(session)[1]["content"]


async def test_openai_tools_never_change_and_call_tool_runs_the_found_tool(
    tmp_path: Path,
) -> None:
    root = workspace_with_tools(tmp_path / "ws")
    script = [
        call("tool_search", query="plan database migrations"),
        proxy("db__plan", {"schema": "public"}),
        proxy("db__plan", {}),  # the schema says "schema" is required
        proxy("nope__missing", {}),
        "Planned.",
    ]
    session, bodies = await run(root, "openai", script)
    assert len(bodies) == 5
    assert all(b["tools"] == bodies[0]["tools"] for b in bodies)
    names = [t["function"]["name"] for t in bodies[0]["tools"]]
    assert "call_tool" in names and not any("__" in n for n in names)
    # the found schema is delivered in the tool_search result the model reads
    tool_msgs = [m for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert "- name: db__plan" in tool_msgs[0]["content"]
    assert '"required": ["schema"]' in tool_msgs[0]["content"]
    out = results(session)
    assert not out[1]["is_error"] and "plan for" in out[1]["content"]
    assert out[2]["is_error"] and "'schema' is a required property" in out[2]["content"]
    assert out[3]["is_error"] and "unknown tool 'nope__missing'" in out[3]["content"]
    # the proxy is unwrapped: counters and events name the real tool
    assert session.status.calls["db__plan"] == 2 and "call_tool" not in session.status.calls


def test_unresolved_reference_falls_back_to_text() -> None:
    result = {"type": "tool_result", "tool_use_id": "t1",
              "content": [{"type": "text", "text": "found gone__tool"},
                          {"type": "tool_reference", "tool_name": "gone__tool"}]}  # fmt: skip
    request = Request(system="s", tools=[ToolSpec("read_file", "r", {"type": "object"})],
                      messages=[{"role": "user", "content": [result]}])  # fmt: skip
    body = build_params(request, "m")
    assert body["messages"][0]["content"][0]["content"] == "found gone__tool"
    assert not anthropic_tool_problem(body)


def _step(calls: int) -> list[dict[str, Any]]:
    use = [{"type": "tool_use", "id": f"t{i}", "name": "read_file", "input": {}}
           for i in range(calls)]  # fmt: skip
    res = [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x"} for i in range(calls)]
    return [{"role": "assistant", "content": use}, {"role": "user", "content": res}]


def _marks(body: dict[str, Any]) -> list[tuple[int, int]]:
    return [(i, j) for i, m in enumerate(body["messages"]) for j, b in enumerate(m["content"])
            if "cache_control" in b]  # fmt: skip


@pytest.mark.parametrize("calls", [3, 12])
async def test_breakpoint_covers_the_previous_tail_when_a_step_adds_many_blocks(
    calls: int,
) -> None:
    first = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    messages = [*first, *_step(calls)]
    body = build_params(Request(system="s", tools=[], messages=messages), "m")
    added = 2 * calls
    expected = [(2, calls - 1)] if added <= LOOKBACK_BLOCKS else [(0, 0), (2, calls - 1)]
    assert _marks(body) == expected
    assert "cache_control" in body["system"][0]  # 1 + marks <= 4 breakpoints in all
    assert "cache_control" not in str(messages)  # the stored transcript is untouched
    # the real SDK sends it and the wire server (which enforces the limit of 4) answers
    with WireServer(["ok"]) as srv:
        model = AnthropicModel(base_url=srv.anthropic_base_url, api_key="k")
        try:
            async for _ in model.stream(Request(system="s", tools=[], messages=messages)):
                pass
        finally:
            await model.aclose()
        assert _marks(srv.bodies("/v1/messages")[0]) == expected


async def test_call_tool_cannot_bypass_permissions(tmp_path: Path) -> None:
    """Attack: the proxy used to reach a built-in (or itself, nested) is checked under the real
    tool's name, so a refused command stays refused."""
    from agent.protocols import PermissionRequest
    from agent.providers.scripted import ScriptedModel

    root = workspace_with_tools(tmp_path / "ws")
    asked: list[PermissionRequest] = []

    def refuse(request: PermissionRequest) -> str:
        asked.append(request)
        return "reject_once"

    script = [
        proxy("run_command", {"command": "touch pwned"}),
        proxy("call_tool", {"name": "run_command", "arguments": {"command": "touch pwned2"}}),
        "ok",
    ]
    session = Session.create(
        root, host=DiskHost(answer=refuse), config=AgentConfig(mode="ask"),
        model=ScriptedModel(script),
    )  # fmt: skip
    await session.prompt("go")
    assert not (root / "pwned").exists() and not (root / "pwned2").exists()
    assert [r.tool for r in asked] == ["run_command"]
    out = results(session)
    assert out[0]["is_error"] and "permission denied for run_command" in out[0]["content"]
    assert out[1]["is_error"] and "call_tool cannot run call_tool" in out[1]["content"]


async def test_found_tools_stay_callable_after_resume(tmp_path: Path) -> None:
    root = workspace_with_tools(tmp_path / "ws")
    first, _ = await run(root, "openai", [call("tool_search", query="plan migrations"), "found"])
    with WireServer([proxy("db__plan", {"schema": "app"}), "planned"]) as srv:
        resumed = Session.load(first.id, host=DiskHost(), model=model_for("openai", srv))
        try:
            assert await resumed.prompt("now plan") == "end_turn"
        finally:
            await resumed.aclose()
        bodies = srv.bodies("/chat/completions")
    out = results(resumed)[-1]
    assert not out["is_error"] and "plan for" in out["content"]
    assert bodies[0]["tools"] == bodies[1]["tools"]
