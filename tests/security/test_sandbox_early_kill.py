"""A command killed while its bubblewrap sandbox is starting leaves nothing running. bwrap's
child, pid 1 of the command's PID namespace, leaves bwrap's process group (``--new-session``) a
moment before it sets its parent-death signal: killing the group in between left it and the
command running on, orphaned (about 1 kill in 20 at 0–20 ms after the start). Through the real
``run_command`` (a cancelled turn, a timeout), ``--verify``'s runner and a skill's script run
through the sandbox's launcher, the real sandbox and bwrap, killed at random early moments; what
is left is found in /proc by a marker."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.protocols import ToolContext
from agent.sandbox import Sandbox, find_backend, load_policy
from agent.tools.shell import CommandTimeout, run_command
from lsp_server.headless.verify import run_verify
from skills_registry.deferred import run_script
from skills_registry.errors import ToolCallError
from skills_registry.launcher import LAUNCHER
from tests.waiting import processes_with, until, wait_until

pytestmark = [
    pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap"),
    pytest.mark.slow,
]

EARLY = 0.02  # seconds after the start: the kill lands while bwrap sets the sandbox up


class Session:
    """The seams run_command touches on a live session, with a real sandbox."""

    def __init__(self, root: Path, sandbox: Sandbox) -> None:
        self.command_env: dict[str, str] = {}
        self.sandbox = sandbox
        self.workspace = type("Workspace", (), {"root": root})()

    def network_granted(self, call_id: str) -> bool:
        return False

    def redact(self, text: str) -> str:
        return text


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Sandbox]:
    sandbox = Sandbox(
        tmp_path, load_policy(tmp_path, tmp_path / "kh", "ask"), kiln_home=tmp_path / "kh"
    )
    yield sandbox
    sandbox.close()


@pytest.fixture
def marker() -> Iterator[str]:
    mark = f"3{os.getpid()}.{random.randrange(10**6)}"  # a `sleep` of weeks: only a kill ends it
    yield mark
    for pid in processes_with(mark):  # without the fix: end them, not leave them to the machine
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _command(marker: str) -> str:
    return f"sleep {marker} & sleep {marker}; echo {marker}"


@pytest.mark.parametrize("how", ["cancel", "timeout"])
async def test_a_command_killed_as_its_sandbox_starts_leaves_nothing_running(
    tmp_path: Path, box: Sandbox, marker: str, how: str
) -> None:
    ctx = ToolContext(tmp_path, Session(tmp_path, box), "c1")
    for _ in range(100):
        early = random.uniform(0.001, EARLY)
        if how == "timeout":
            with pytest.raises(CommandTimeout):
                await run_command({"command": _command(marker), "timeout": early}, ctx)
            continue
        call = asyncio.ensure_future(run_command({"command": _command(marker)}, ctx))
        await asyncio.sleep(early)
        call.cancel()
        done, _ = await asyncio.wait([call], timeout=30)  # bounds a hang, not a speed
        assert done and call.cancelled()
    await until(lambda: not processes_with(marker), timeout=20, what="every command to end")


def test_a_verification_timed_out_as_its_sandbox_starts_leaves_nothing_running(
    tmp_path: Path, box: Sandbox, marker: str
) -> None:
    for _ in range(100):
        early = random.uniform(0.001, EARLY)
        result = run_verify(_command(marker), tmp_path, timeout=early, sandbox=box)
        assert result.timed_out
    assert wait_until(lambda: not processes_with(marker), timeout=20), processes_with(marker)


@pytest.mark.parametrize("how", ["cancel", "timeout"])
async def test_a_skill_script_killed_as_its_sandbox_starts_leaves_nothing_running(
    tmp_path: Path, box: Sandbox, marker: str, how: str
) -> None:
    argv = ["/bin/sh", "-c", _command(marker)]
    token = LAUNCHER.set(box.launcher())
    try:
        for _ in range(100):
            early = random.uniform(0.001, EARLY)
            if how == "timeout":
                with pytest.raises(ToolCallError, match="timed out"):
                    await run_script(argv, {}, cwd=tmp_path, label="s", timeout=early)
                continue
            call = asyncio.ensure_future(run_script(argv, {}, cwd=tmp_path, label="s"))
            await asyncio.sleep(early)
            call.cancel()
            done, _ = await asyncio.wait([call], timeout=30)  # bounds a hang, not a speed
            assert done and call.cancelled()
    finally:
        LAUNCHER.reset(token)
    await until(lambda: not processes_with(marker), timeout=20, what="every script to end")
