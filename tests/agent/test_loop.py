"""The loop end to end with the scripted model and Kiln's real tools on a real git repo."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from agent.events import Event, ToolCallFinished
from agent.providers.scripted import ScriptedModel
from agent.session import AgentConfig, DiskHost, Session
from agent.session_store import SessionStore
from tests.repos import PYTEST
from tests.waiting import processes_with, until


def call(name: str, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "input": args}]}


def fix_script() -> list:
    return [
        call("grep", pattern="def add"),
        {"match": "calc.py:1", **call("read_file", path="calc.py")},
        call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
        call("run_command", command=PYTEST),
        {"match": "1 passed", "text": "Fixed `add` in calc.py; the test passes."},
    ]


async def run(
    root: Path, script: list, mode: str = "yolo", **cfg: object
) -> tuple[Session, str, list[Event]]:
    events: list[Event] = []
    session = Session.create(
        root,
        host=DiskHost(events.append),
        config=AgentConfig(mode=mode, **cfg),
        model=ScriptedModel(script),
    )
    reason = await session.prompt("The test fails. Fix it.")
    return session, reason, events


async def test_scripted_model_fixes_failing_test(failing_repo: Path) -> None:
    before = subprocess.run(PYTEST, shell=True, cwd=failing_repo, capture_output=True)
    assert before.returncode != 0
    session, reason, events = await run(failing_repo, fix_script())
    assert reason == "end_turn"
    after = subprocess.run(PYTEST, shell=True, cwd=failing_repo, capture_output=True)
    assert after.returncode == 0
    kinds = [e.kind for e in events]
    assert kinds.count("tool_call") == 4 and kinds[-1] == "done"
    # the transcript shows every step, stored in SQLite
    stored = SessionStore().messages(session.id)
    tool_names = [b["name"] for m in stored for b in m["content"] if b.get("type") == "tool_use"]
    assert tool_names == ["grep", "read_file", "edit_file", "run_command"]
    results = [b for m in stored for b in m["content"] if b.get("type") == "tool_result"]
    assert all(not r["is_error"] for r in results)
    assert '<external_content source="file:calc.py">' in results[1]["content"]
    assert session.turn.files_modified == ["calc.py"]


async def test_malformed_tool_calls_are_answered_not_crashed(failing_repo: Path) -> None:
    script = [
        {"tool_calls": [{"name": "read_file", "arguments": "{not json"}]},
        call("read_file", path=7),
        call("no_such_tool", x=1),
        call("read_file", path="../outside.txt"),
        "gave up politely",
    ]
    session, reason, _ = await run(failing_repo, script)
    assert reason == "end_turn"
    results = [
        b
        for m in session.transcript.messages
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert [r["is_error"] for r in results] == [True, True, True, True]
    assert "not valid JSON" in results[0]["content"]
    assert "path" in results[1]["content"] and "suggestion:" in results[1]["content"]
    assert "unknown tool 'no_such_tool'" in results[2]["content"]
    assert "outside the workspace" in results[3]["content"]


async def test_edit_refusals(failing_repo: Path) -> None:
    script = [
        call("edit_file", path="calc.py", old_text="a", new_text="b"),
        call("edit_file", path="calc.py", old_text="nothing like this", new_text="x"),
        call("edit_file", path="calc.py", old_text="return a - b", new_text="return a + b"),
        "done",
    ]
    # ask mode with nobody answering: the edit is refused, and the file is unchanged
    session, reason, events = await run(failing_repo, script, mode="ask")
    results = [
        b
        for m in session.transcript.messages
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert "occurs" in results[0]["content"]
    assert "not found" in results[1]["content"]
    assert "permission denied" in results[2]["content"]
    assert "return a - b" in (failing_repo / "calc.py").read_text()
    assert session.turn.refusals and any(e.kind == "refusal" for e in events)


async def test_step_limit_and_resume_replays_identical_requests(failing_repo: Path) -> None:
    model = ScriptedModel([call("list_files"), call("list_files", path="."), "late answer"])
    session = Session.create(
        failing_repo, host=DiskHost(), config=AgentConfig(mode="yolo", max_steps=2), model=model
    )
    reason = await session.prompt("look around")
    assert reason == "max_steps"
    first_requests = len(model.requests)
    # resume from the store: the next request starts with the same bytes as the stored trajectory
    again = Session.load(session.id, host=DiskHost(), config=AgentConfig(mode="yolo"), model=model)
    assert again.transcript.messages == session.transcript.messages
    assert again.build_request().system == session.build_request().system
    reason = await again.prompt("go on")
    assert reason == "end_turn"
    from agent.types import canonical_json

    old = canonical_json([m for m in model.requests[first_requests - 1].messages])
    new = canonical_json(model.requests[first_requests].messages)
    assert new.startswith(old[:-1])


async def test_cancel_kills_running_command(failing_repo: Path) -> None:
    tag = str(failing_repo / "sleeper")  # marks the sleeper's command line
    command = (
        f"touch started.txt; python3 -c 'import time; time.sleep(30)' {tag}; touch finished.txt"
    )
    model = ScriptedModel([call("run_command", command=command), "never"])
    session = Session.create(
        failing_repo, host=DiskHost(), config=AgentConfig(mode="yolo"), model=model
    )
    task = asyncio.ensure_future(session.prompt("wait"))
    started = failing_repo / "started.txt"
    await until(lambda: started.exists() and processes_with(tag), what="the command to start")
    session.cancel()
    reason = await asyncio.wait_for(task, 60)
    assert reason == "cancelled"
    await until(lambda: not processes_with(tag), what="the command to be killed")
    assert not (failing_repo / "finished.txt").exists()
    last = session.transcript.messages[-1]
    assert last["content"][0]["type"] == "tool_result" and last["content"][0]["is_error"]


async def test_provider_dying_mid_stream_keeps_the_partial_text(failing_repo: Path) -> None:
    events: list[Event] = []
    model = ScriptedModel([{"raise": "partial", "text": "I was halfway through expl"}])
    session = Session.create(
        failing_repo, host=DiskHost(events.append), config=AgentConfig(mode="yolo"), model=model
    )
    reason = await session.prompt("explain")
    assert reason == "error"
    assert session.transcript.messages[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "I was halfway through expl"}],
    }
    assert [e.kind for e in events][-2:] == ["error", "done"]
    # the stored transcript is consistent and the session can go on
    again = Session.load(
        session.id, host=DiskHost(), config=AgentConfig(mode="yolo"), model=ScriptedModel(["ok"])
    )
    assert await again.prompt("go on") == "end_turn"


async def test_time_limit_interrupts_a_running_tool(failing_repo: Path) -> None:
    model = ScriptedModel([call("run_command", command="sleep 30; touch late.txt"), "never"])
    session = Session.create(
        failing_repo, host=DiskHost(), config=AgentConfig(mode="yolo", max_seconds=1.0), model=model
    )
    reason = await asyncio.wait_for(session.prompt("wait"), 15)
    assert reason == "max_time"
    assert not (failing_repo / "late.txt").exists()
    assert session.transcript.messages[-1]["content"][0]["is_error"]


async def test_unattended_refusal_says_nobody_was_asked(failing_repo: Path) -> None:
    model = ScriptedModel([call("run_command", command="make"), "ok"])
    session = Session.create(
        failing_repo, host=DiskHost(), config=AgentConfig(mode="ask"), model=model
    )
    await session.prompt("build")
    assert "nobody to ask" in session.turn.refusals[0]["reason"]


async def test_a_cancel_while_a_finished_tool_is_reported_keeps_its_result(
    failing_repo: Path,
) -> None:
    """A cancel that landed while the host was being told a tool had finished (an editor's
    Stop as the edit's "completed" update went out) dropped the tool's result: the transcript
    said "not run: turn ended (cancelled)" about a file that had been written, and the model
    was told so on the next turn."""
    reporting = asyncio.Event()

    async def on_event(event: Event) -> None:
        if isinstance(event, ToolCallFinished) and event.status == "completed":
            reporting.set()
            await asyncio.Event().wait()  # the editor is slow to take the update

    model = ScriptedModel([call("write_file", path="made.txt", content="made\n"), "never"])
    session = Session.create(
        failing_repo, host=DiskHost(on_event), config=AgentConfig(mode="yolo"), model=model
    )
    task = asyncio.ensure_future(session.prompt("write it"))
    await asyncio.wait_for(reporting.wait(), 60)
    session.cancel()
    assert await asyncio.wait_for(task, 60) == "cancelled"
    assert (failing_repo / "made.txt").read_text() == "made\n"
    results = [
        b
        for m in session.transcript.messages
        if m["role"] == "user"
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    assert len(results) == 1 and not results[0]["is_error"], results
    assert "not run" not in str(results[0]["content"])
