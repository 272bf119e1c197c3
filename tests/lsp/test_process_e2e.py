"""How `kiln lsp` ends, as a process over stdio: `exit` with and without `shutdown`, `shutdown`
during a turn, SIGTERM, the editor process vanishing, stdin closing. Running commands die with
their whole process tree, and a pending prompt is answered before the process goes."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer
from tests.waiting import answer_when, processes_with, until

pytestmark = pytest.mark.e2e


async def test_exit_without_shutdown_exits_1(workspace: Path, kiln_home: Path) -> None:
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace)
        server.notify("exit")
        assert await server.exit_code() == 1
    finally:
        await server.close()


async def test_exit_right_behind_shutdown_exits_0(workspace: Path, kiln_home: Path) -> None:
    """A client that writes `exit` without waiting for the `shutdown` answer: the shutdown was
    received first, so the exit code is 0 (LSP spec), and the shutdown is still answered."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace)
        server.request_nowait(2, "shutdown")
        server.notify("exit")
        assert await server.exit_code() == 0
    finally:
        await server.close()


async def test_shutdown_mid_turn_answers_the_prompt_cancelled_first(
    workspace: Path, scripted_env: Any, tmp_path: Path
) -> None:
    """PROTOCOL.md §8: `shutdown` cancels running turns and their prompts are answered
    `cancelled` before `shutdown` is; the session stays loadable."""
    steps = [{"wait_for": str(tmp_path / "never")}, "late"]
    server = await RawServer.start(workspace, scripted_env(steps))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        server.request_nowait("turn", "kiln/session/prompt", {"sessionId": sid, "prompt": "go"})
        await until_busy_raw(server, sid)
        assert (await server.request("bye", "shutdown"))["result"] is None
        answers = [m.get("id") for m in server.messages if m.get("id") in ("turn", "bye")]
        assert answers == ["turn", "bye"]
        assert (await server.response("turn"))["result"]["stopReason"] == "cancelled"
        server.notify("exit")
        assert await server.exit_code() == 0
    finally:
        await server.close()
    server = await RawServer.start(workspace, scripted_env(["again"]))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        loaded = await server.request("load", "kiln/session/load", {"sessionId": sid})
        assert loaded["result"]["sessionId"] == sid and loaded["result"]["messages"] >= 1
    finally:
        await server.close()


async def until_busy_raw(server: RawServer, sid: str) -> None:
    """Ask kiln/session/list until ``sid`` is running a turn."""
    ids = itertools.count()

    def busy(listed: dict[str, Any]) -> bool:
        return any(s["busy"] for s in listed["result"]["sessions"] if s["sessionId"] == sid)

    listed = await answer_when(
        lambda: server.request(f"busy-{next(ids)}", "kiln/session/list"), busy
    )
    assert busy(listed), listed


def _command_turn(marker: str) -> list[Any]:
    command = f"sh -c 'sleep {marker} & sleep {marker}; wait'"
    return [
        {"match": "run", "text": "", "tool_calls": [{"name": "run_command", "input": {"command": command}}]},
        "finished",
    ]  # fmt: skip


def _marker() -> str:
    return f"1{uuid.uuid4().int % 10**6}.{os.getpid()}"  # a unique `sleep` duration


async def _start_turn(server: RawServer, workspace: Path) -> None:
    await server.initialize(workspace, initializationOptions={"mode": "yolo"})
    session = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
    server.request_nowait("turn", "kiln/session/prompt", {"sessionId": session, "prompt": "run"})
    await server.wait_for(
        lambda m: (
            m.get("method") == "kiln/session/update"
            and m["params"]["update"].get("kind") == "execute"
        )
    )


@pytest.mark.slow
async def test_sigterm_mid_turn_kills_the_command_tree_and_answers(
    workspace: Path, scripted_env: Any
) -> None:
    marker = _marker()
    server = await RawServer.start(workspace, scripted_env(_command_turn(marker)))
    try:
        await _start_turn(server, workspace)
        await until(
            lambda: len(processes_with(f"sleep {marker}", leading=True)) >= 2, what="the command"
        )
        server.proc.send_signal(signal.SIGTERM)
        answer = await server.response("turn")
        assert answer["result"]["stopReason"] == "cancelled"
        assert await server.exit_code() == 0
        await until(lambda: not processes_with(f"sleep {marker}"), what="the tree to die")
        updates = [
            m["params"]["update"]
            for m in server.messages
            if m.get("method") == "kiln/session/update"
        ]
        closed = [u for u in updates if u["sessionUpdate"] == "tool_call_update"]
        assert closed and closed[-1]["status"] == "failed"  # not left in_progress
    finally:
        await server.close()


@pytest.mark.slow
async def test_the_server_ends_when_the_editor_process_is_gone(
    workspace: Path, scripted_env: Any
) -> None:
    marker = _marker()
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import time; time.sleep(600)"
    )
    env = {**scripted_env(_command_turn(marker)), "KILN_PARENT_POLL_SECONDS": "0.2"}
    server = await RawServer.start(workspace, env)
    try:
        await server.initialize(
            workspace, processId=parent.pid, initializationOptions={"mode": "yolo"}
        )
        session = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        server.request_nowait(
            "turn", "kiln/session/prompt", {"sessionId": session, "prompt": "run"}
        )
        await until(
            lambda: len(processes_with(f"sleep {marker}", leading=True)) >= 2, what="the command"
        )
        parent.kill()
        await parent.wait()
        assert await server.exit_code() == 1  # gone without shutdown
        await until(lambda: not processes_with(f"sleep {marker}"), what="the tree to die")
    finally:
        await server.close()
        if parent.returncode is None:
            parent.kill()
            await parent.wait()


async def test_stdin_closing_ends_the_server_with_0(workspace: Path, kiln_home: Path) -> None:
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace)
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        assert await server.exit_code() == 0
    finally:
        await server.close()
