"""A turn cancelled while its commands are starting ends them. The process exists before the
spawn's await returns, and a cancel that landed in between lost it: twelve `sleep` calls of a
fan-out ran on, orphaned, for their whole length. Real processes, found in /proc."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

from agent.protocols import ToolContext
from agent.tools.shell import run_command


class Session:
    """The seams run_command touches on a live session, with no sandbox."""

    def __init__(self, root: Path) -> None:
        self.command_env: dict[str, str] = {}
        self.sandbox = None
        self.workspace = type("Workspace", (), {"root": root})()

    def network_granted(self, call_id: str) -> bool:
        return False

    def redact(self, text: str) -> str:
        return text


def running(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                    pids.append(int(entry.name))
            except (OSError, UnicodeDecodeError):
                pass
    return pids


async def test_commands_cancelled_while_starting_do_not_run_on(tmp_path: Path) -> None:
    ctx = ToolContext(tmp_path, Session(tmp_path), "c1")
    marker = f"sleep 3{os.getpid()}.5"  # hours: only a kill ends it
    calls: list[asyncio.Future[Any]] = [
        asyncio.ensure_future(run_command({"command": f"{marker}{i}"}, ctx)) for i in range(8)
    ]
    try:
        await asyncio.sleep(0)  # each call is inside its spawn's await
        await asyncio.sleep(0)
        for call in calls:
            call.cancel()
        done, pending = await asyncio.wait(calls, timeout=30)  # bounds a hang, not a speed
        assert not pending, "cancelled calls never ended"
        assert all(call.cancelled() for call in done)
        assert running(marker) == []
    finally:
        for pid in running(marker):  # before the fix: end them, or the loop's close waits on them
            os.kill(pid, signal.SIGKILL)
