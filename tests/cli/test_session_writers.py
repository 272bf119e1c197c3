"""Two writers of one session: `kiln run --resume S` while another `kiln` runs a turn in S is
refused in one line, and the session keeps one coherent trajectory. A copy of a session loaded
before another process wrote to it refuses its next turn instead of interleaving."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from agent.errors import SessionBusy
from agent.hosts import DiskHost
from agent.providers.scripted import ScriptedModel
from agent.session import AgentConfig, Session
from tests.waiting import wait_until


def _env(tmp_path: Path, name: str, steps: list) -> dict[str, str]:
    script = tmp_path / f"{name}.json"
    script.write_text(json.dumps(steps))
    return {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}


def _run(tmp_path: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "lsp_server", "run", *args, "--root", str(tmp_path / "ws")]


def _stored(kiln_home: Path, session_id: str, text: str) -> bool:
    with sqlite3.connect(kiln_home / "sessions.db") as db:
        rows = db.execute(
            "SELECT count(*) FROM messages WHERE session_id = ? AND json LIKE ?",
            (session_id, f"%{text}%"),
        ).fetchone()
    return bool(rows[0])


def test_a_second_writer_is_refused_and_the_trajectory_stays_whole(
    tmp_path: Path, kiln_home: Path
) -> None:
    (tmp_path / "ws").mkdir()
    first = subprocess.run(
        _run(tmp_path, "first task"), env=_env(tmp_path, "first", ["first answer"]),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    session_id = first.stderr.rsplit("session ", 1)[1].strip()
    release = tmp_path / "release"
    holder = subprocess.Popen(
        _run(tmp_path, "task A", "--resume", session_id),
        env=_env(tmp_path, "a", [{"wait_for": str(release)}, "answer A"]),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert wait_until(lambda: _stored(kiln_home, session_id, "task A"), timeout=120)
        second = subprocess.run(
            _run(tmp_path, "task B", "--resume", session_id),
            env=_env(tmp_path, "b", ["answer B"]), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert second.returncode == 2 and "Traceback" not in second.stderr, second.stderr
        assert second.stderr.strip().splitlines() == [
            f"kiln: session {session_id} is running a turn in another Kiln process "
            "(wait for it to finish, or start a new session)"
        ]
        release.touch()
        out, err = holder.communicate(timeout=120)
    finally:
        holder.kill()
    assert holder.returncode == 0 and "Traceback" not in err, err
    shown = subprocess.run(
        [sys.executable, "-m", "lsp_server", "sessions", "show", session_id, "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    texts = [
        block["text"]
        for message in json.loads(shown.stdout)["messages"]
        for block in message["content"]
        if block.get("type") == "text" and not block["text"].startswith("<")
    ]
    assert texts == ["first task", "first answer", "task A", "answer A"]


async def test_a_copy_loaded_before_another_wrote_refuses_its_turn(tmp_path: Path) -> None:
    session = Session.create(
        tmp_path, host=DiskHost(), config=AgentConfig(mode="yolo"), model=ScriptedModel(["one"])
    )
    await session.prompt("first")
    stale = Session.load(session.id, host=DiskHost(), model=ScriptedModel(["never sent"]))
    fresh = Session.load(session.id, host=DiskHost(), model=ScriptedModel(["two"]))
    await fresh.prompt("second")
    before = fresh.store.position(session.id)
    try:
        await stale.prompt("third")
    except SessionBusy as exc:
        assert "changed in another Kiln process since it was loaded" in str(exc)
    else:
        raise AssertionError("a stale copy appended to the session")
    assert fresh.store.position(session.id) == before


def test_a_session_killed_mid_tool_resumes_with_the_call_answered(
    tmp_path: Path, kiln_home: Path
) -> None:
    """SIGKILL (or a power cut) while a command runs leaves a tool call with no result; the
    next turn answers it first, since no provider accepts a trajectory without one."""
    (tmp_path / "ws").mkdir()
    started = tmp_path / "ws" / "started"
    call = {"name": "run_command", "input": {"command": "touch started && sleep 600"}}
    proc = subprocess.Popen(
        [*_run(tmp_path, "run the slow thing"), "--mode", "yolo", "--no-sandbox"],
        env=_env(tmp_path, "slow", [{"tool_calls": [call]}, "never reached"]),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert wait_until(started.exists, timeout=120), "the command never started"
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    with sqlite3.connect(kiln_home / "sessions.db") as db:
        session_id = db.execute("SELECT id FROM sessions").fetchone()[0]
    again = subprocess.run(
        _run(tmp_path, "carry on", "--resume", session_id),
        env=_env(tmp_path, "again", ["carried on"]), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "lsp_server", "sessions", "show", session_id, "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    messages = json.loads(shown.stdout)["messages"]
    kinds = [[b["type"] for b in m["content"]] for m in messages]
    at = kinds.index(["tool_use"])
    use, answer = messages[at]["content"][0], messages[at + 1]["content"][0]
    assert answer["type"] == "tool_result" and answer["tool_use_id"] == use["id"]
    assert answer["is_error"] and "interrupted" in answer["content"]
    assert messages[-1]["content"][0]["text"] == "carried on"
