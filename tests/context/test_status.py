"""The status bar: each reading and its guidance, change detection, and the live session tail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.errors import ConfigError
from agent.providers.scripted import ScriptedModel
from agent.session import DiskHost, Session
from agent.status import StatusBar, status_mode
from agent.types import canonical_json
from tests.context.conftest import call, make_session


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def bar(**kw: object) -> tuple[StatusBar, Clock]:
    clock = Clock()
    return StatusBar(
        cwd="/work/app", started=clock.now, clock=clock, os_name="Linux x86_64", **kw
    ), clock


def lines(status: StatusBar) -> dict[str, str]:
    return {r.key: r.line() for r in status.readings()}


def test_static_readings_have_guidance() -> None:
    status, _ = bar()
    got = lines(status)
    assert got["cwd"] == "cwd: /work/app -> paths in tool calls are relative to it"
    assert got["os"] == "os: Linux x86_64 -> use commands that exist on this system"
    assert got["elapsed"] == "elapsed: 0 min -> no time limit; stay on the user's task"
    assert all(r.guidance for r in status.readings())  # every reading carries guidance


def test_calls_per_tool_and_repeats() -> None:
    status, _ = bar()
    for _ in range(3):
        status.record_call("grep", {"pattern": "x"}, 0.1, None)
    status.record_call("read_file", {"path": "a.py"}, 0.1, None)
    got = lines(status)
    assert got["tool_calls"] == (
        "tool_calls: grep=3, read_file=1 -> run independent calls together in one step"
    )
    assert got["repeated_call"] == (
        'repeated_call: grep{"pattern":"x"} made 3 times -> change approach instead of repeating it'
    )


def test_identical_failures_and_last_error() -> None:
    status, _ = bar()
    for _ in range(3):
        status.record_call("run_command", {"command": "make"}, 0.1, ("exit 2", "install make"))
    got = lines(status)
    assert got["identical_failures"].endswith("-> 3 identical failures: change approach")
    assert (
        got["failures_in_a_row"]
        == "failures_in_a_row: 3 -> stop retrying; diagnose or change approach"
    )
    assert got["last_error"] == "last_error: run_command: exit 2 -> install make"
    status.record_call("run_command", {"command": "ls"}, 0.1, None)
    assert "failures_in_a_row" not in lines(status) and "last_error" not in lines(status)


def test_slow_call_against_usual_duration() -> None:
    status, _ = bar()
    for _ in range(3):
        status.record_call("run_command", {"command": "pytest"}, 2.0, None)
    status.record_call("run_command", {"command": "pytest"}, 30.0, None)
    assert lines(status)["slow_call"] == (
        "slow_call: run_command took 30s (usual 2.0s) -> check why before running it again"
    )


def test_elapsed_and_steps_near_their_limits() -> None:
    status, clock = bar(max_seconds=600.0, max_steps=50)
    status.steps = 10
    assert lines(status)["steps"] == "steps: 10 of 50 -> 40 left in this turn"
    assert lines(status)["elapsed"] == "elapsed: 0 min of 10 min -> 10 min left"
    clock.now += 540
    status.steps = 48
    got = lines(status)
    assert got["elapsed"] == "elapsed: 9 min of 10 min -> time is short: wrap up and report"
    assert got["steps"] == "steps: 48 of 50 -> finish now: verify and report"


def test_todos_with_status() -> None:
    status, _ = bar()
    status.todos = [{"id": "1", "content": "fix", "status": "pending"}]
    assert lines(status)["todos"] == "todos: [pending] fix -> 1 open: mark the next one in_progress"
    status.todos = [
        {"id": "1", "content": "fix", "status": "in_progress"},
        {"id": "2", "content": "test", "status": "pending"},
    ]
    assert lines(status)["todos"].endswith("-> 2 open: keep the list current as you finish each")
    status.todos = [{"id": "1", "content": "fix", "status": "completed"}]
    assert lines(status)["todos"] == "todos: [completed] fix -> all done: verify and report"


def test_context_use() -> None:
    status, _ = bar()
    status.context_used = 0.3
    assert lines(status)["context_used"] == "context_used: 30% of the window -> room to spare"
    status.context_used = 0.65
    assert "read ranges (offset/limit)" in lines(status)["context_used"]
    status.context_used = 0.85
    assert "older rounds will be compacted" in lines(status)["context_used"]


def test_short_mode_sends_only_notable_changes() -> None:
    status, _ = bar()
    first = status.changed_block()
    assert first is not None and first.startswith("<agent_status>\ncwd: /work/app")
    status.record_call("grep", {"pattern": "x"}, 0.1, None)
    assert status.changed_block() is None  # a counter moved: not worth a block
    status.record_call("run_command", {"command": "make"}, 0.1, ("make: exit code 2", "fix"))
    block = status.changed_block() or ""
    assert block == (
        '<agent_status mode="delta">\nlast_error: run_command: make: exit code 2 -> fix\n'
        "</agent_status>"
    )
    status.context_used = 0.05  # room to spare is not news
    assert status.changed_block() is None
    status.context_used = 0.41
    assert "context_used: 40%" in (status.changed_block() or "")
    status.context_used = 0.46  # same fifth of the window, same band: not re-sent
    assert status.changed_block() is None
    status.reset()  # after a compaction: complete again
    assert (status.changed_block() or "").startswith("<agent_status>\ncwd:")


def test_repeated_call_clears_when_the_agent_changes_course() -> None:
    status, _ = bar()
    for _ in range(3):
        status.record_call("grep", {"pattern": "x"}, 0.1, None)
    assert "repeated_call" in lines(status)
    status.record_call("read_file", {"path": "a.py"}, 0.1, None)
    status.record_call("edit_file", {"path": "a.py"}, 0.1, None)
    assert "repeated_call" not in lines(status)


def test_last_error_ages_out() -> None:
    status, _ = bar()
    status.record_call("grep", {"pattern": "("}, 0.1, ("bad regex", "escape it"))
    for i in range(3):
        status.record_call("read_file", {"path": f"{i}.py"}, 0.1, None)
        assert "last_error" in lines(status)
    status.record_call("read_file", {"path": "3.py"}, 0.1, None)
    assert "last_error" not in lines(status)


async def test_nonzero_exit_is_an_error_the_bar_shows(workspace: Path) -> None:
    failing = call("run_command", command="exit 3")
    session, _ = make_session(workspace, [failing, "done"])
    await session.prompt("run it")
    result = session.transcript.messages[2]["content"][0]
    assert result["type"] == "tool_result" and not result["is_error"]
    assert "exit code 3" in result["content"]
    status = session.transcript.messages[2]["content"][-1]["text"]
    assert "last_error: run_command: exit 3: exit code 3" in status


def test_changed_block_full_and_delta_modes() -> None:
    status, _ = bar(mode="full")
    first = status.changed_block()
    assert first is not None and first.startswith("<agent_status>\ncwd: /work/app")
    assert status.changed_block() is None  # nothing changed: nothing appended
    status.record_call("grep", {"pattern": "x"}, 0.1, None)
    again = status.changed_block()
    assert again is not None and "cwd:" in again and "tool_calls: grep=1" in again

    delta, _ = bar(mode="delta")
    assert "cwd:" in (delta.changed_block() or "")
    delta.record_call("grep", {"pattern": "x"}, 0.1, None)
    block = delta.changed_block() or ""
    assert block == (
        '<agent_status mode="delta">\n'
        "tool_calls: grep=1 -> run independent calls together in one step\n</agent_status>"
    )


async def test_session_tail_carries_the_status(workspace: Path) -> None:
    missing = call("read_file", path="src/missing.py")
    session, _ = make_session(workspace, [missing, missing, missing, "giving up"])
    await session.prompt("read src/missing.py")
    tails = [
        b["text"]
        for m in session.transcript.messages
        for b in m["content"]
        if b.get("type") == "text" and b["text"].startswith("<agent_status")
    ]
    # after each step only when something notable changed: the second identical failure
    # changes nothing the model needs to hear again
    assert len(tails) == 2
    assert tails[0].startswith("<agent_status>\ncwd:") and "steps: 1 of 50" in tails[0]
    assert tails[1].startswith('<agent_status mode="delta">')
    assert "3 identical failures: change approach" in tails[-1]
    assert "last_error: read_file: src/missing.py does not exist -> check the path" in tails[0]
    assert "steps:" not in tails[-1]  # counters wait for a full block
    # appended, never rewritten: the earlier blocks are still there, byte for byte
    assert canonical_json(session.transcript.messages[:3]) == canonical_json(
        session.model.requests[1].messages
    )


async def test_counters_and_todos_survive_resume(workspace: Path) -> None:
    todo = [{"id": "1", "content": "ship it", "status": "in_progress"}]
    script = [call("todo_write", items=todo), call("grep", pattern="def main"), "ok"]
    session, _ = make_session(workspace, script)
    await session.prompt("plan and look")
    model = ScriptedModel([call("list_files"), "done"])
    resumed = Session.load(session.id, host=DiskHost(), model=model)
    await resumed.prompt("go on")
    turn_start = next(
        m for m in reversed(resumed.transcript.messages) if m["content"][-1].get("text") == "go on"
    )
    status = turn_start["content"][0]["text"]  # the first block after a resume is complete
    assert status.startswith("<agent_status>")
    assert "tool_calls: grep=1, todo_write=1" in status
    assert "todos: [in_progress] ship it" in status


def test_status_mode_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert status_mode({}) == "short"
    monkeypatch.setenv("KILN_STATUS_MODE", "full")
    assert status_mode({}) == "full" and status_mode({"status_mode": "delta"}) == "delta"
    monkeypatch.setenv("KILN_STATUS_MODE", "loud")
    with pytest.raises(ConfigError, match="status mode 'loud'"):
        status_mode({})
    script = tmp_path / "script.json"
    script.write_text('["hello"]')
    monkeypatch.setenv("KILN_SCRIPT", str(script))
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "hi", "--root", str(tmp_path),
         "--provider", "scripted"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )  # fmt: skip
    assert proc.returncode == 2 and "status mode 'loud'" in proc.stderr
    assert "Traceback" not in proc.stderr
