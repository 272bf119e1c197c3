"""run_command: a shell command in the workspace, with a timeout, captured output and a clean kill.

The command runs in its own process group so a timeout or a cancelled turn kills the whole tree,
not just the shell (in the bubblewrap sandbox, with the namespace's pid 1, which may have left
the group: ``agent.sandbox.pid_one``). Its output is read as it comes and only its start and end
are kept: a command that prints hundreds of megabytes (a test suite in a loop, `yes`) costs two
megabytes, not a runner's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from typing import Any

from agent.errors import ToolError
from agent.injection import external
from agent.protocols import ToolContext
from agent.sandbox import SHELL
from agent.sandbox.guard import MemoryGuard
from agent.sandbox.pid_one import PidOne
from agent.tools.base import FunctionTool, schema
from agent.types import ToolOutput, ToolSpec
from kiln_errors.shown import cut

DEFAULT_TIMEOUT = 120


class CommandTimeout(ToolError):
    """The command ran out of time and was stopped (reported as a timeout, not a failure)."""


MAX_TIMEOUT = 1800
KEPT_BYTES = 1 << 20  # of the output's start, and as many of its end


class _Output:
    """The start and the end of a command's output, and how much it printed in all."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, piece: bytes) -> None:
        self.total += len(piece)
        room = KEPT_BYTES - len(self.head)
        self.head += piece[:room]
        self.tail += piece[room:] if room > 0 else piece
        if len(self.tail) > 2 * KEPT_BYTES:
            del self.tail[:-KEPT_BYTES]

    def kept(self) -> tuple[bytes, bytes]:
        """The start and the end, cut at line ends when something is left out between them
        (a secret on one line is kept whole, for redaction, or not at all)."""
        head, tail = bytes(self.head), bytes(self.tail[-KEPT_BYTES:])
        if len(head) + len(tail) < self.total:
            head = head[: head.rfind(b"\n") + 1] or head
            tail = tail[tail.find(b"\n") + 1 :] or tail
        return head, tail

    @property
    def left_out(self) -> int:
        return self.total - sum(map(len, self.kept()))

    def data(self) -> bytes:
        head, tail = self.kept()
        if not self.left_out:
            return head + tail
        return head + f"[… {self.left_out:,} bytes of output left out here …]\n".encode() + tail

    async def read(self, stream: asyncio.StreamReader | None) -> None:
        while stream is not None and (piece := await stream.read(1 << 16)):
            self.add(piece)


def _kill_group(proc: asyncio.subprocess.Process, pid_one: PidOne) -> None:
    """Kill the command's process group, and its sandbox's pid 1, which may have left it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    pid_one.kill()


async def run_command(args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
    command = args["command"]
    timeout = min(float(args.get("timeout") or DEFAULT_TIMEOUT), MAX_TIMEOUT)
    session = ctx.session
    env = dict(os.environ)
    env.update(session.command_env)
    env.setdefault("PYTHONUNBUFFERED", "1")
    argv = [SHELL, "-c", command]
    sandbox = getattr(session, "sandbox", None)
    guard = None

    def confined() -> list[str]:
        assert sandbox is not None
        network = session.network_granted(ctx.call_id)
        return list(sandbox.shell(command, network=network, cwd=session.workspace.root))

    if sandbox is not None:
        argv = confined()
        env = sandbox.env(env)
        guard = MemoryGuard(
            session.workspace.root,
            extra=sandbox.guarded,
            nested=sandbox.nested_files(fresh=False),
            links=sandbox.readonly,  # a denied path that is a link is put back if replaced
        )
    started = time.monotonic()
    proc, output = await _run(argv, env, command, timeout, session, guard, sandbox)
    if sandbox is not None and sandbox.went_away(argv, proc.returncode, output.data()):
        # A path the sandbox covers (a daemon's socket under /run) went away between building
        # its mounts and bwrap's start, so the command never ran: built again, it runs.
        argv = confined()
        proc, output = await _run(argv, env, command, timeout, session, guard, sandbox)
    elapsed = time.monotonic() - started
    text = session.redact(output.data().decode("utf-8", "replace"))
    header = f"exit code {proc.returncode} after {elapsed:.1f}s"
    if output.left_out:
        header += (
            f"\n[{output.total:,} bytes of output: its first and last {KEPT_BYTES >> 20} MB are "
            f"kept, {output.left_out:,} bytes left out between them]"
        )
    removed, nested = _undo(guard, sandbox)
    if removed:
        header += (
            f"\n[removed {', '.join(removed)}: commands do not create memory, settings or files "
            "an editor or git runs on its own; use remember or the file tools (they ask)]"
        )
    if nested:
        header += (
            f"\n[{'; '.join(nested)}: a nested repository recorded in the index runs its own "
            "git config at the user's next git status, on the host; commands do not record one]"
        )
    result = external(f"command:{cut(command)}", f"{header}\n{text}" if text else header)
    undone = [f"{name} was created by the command; removed" for name in removed]
    if proc.returncode:
        # Not a failed tool call (the output is what the model needs), but an error to show.
        error = f"{command[:80]}: exit code {proc.returncode}"
        return ToolOutput(result, error=error, refused=undone)
    return ToolOutput(result, refused=undone) if undone else result


async def _run(
    argv: list[str],
    env: dict[str, str],
    command: str,
    timeout: float,
    session: Any,
    guard: MemoryGuard | None,
    sandbox: Any,
) -> tuple[asyncio.subprocess.Process, _Output]:
    """Start ``argv`` in its own process group and read its output until it ends; on timeout or
    cancel the group (and the sandbox's pid 1, ``pid_one``) is killed and what the command may
    not leave is undone."""
    pid_one = PidOne.of(argv, sandbox)
    try:
        return await _run_started(pid_one, env, command, timeout, session, guard, sandbox)
    finally:
        pid_one.close()


async def _run_started(
    pid_one: PidOne,
    env: dict[str, str],
    command: str,
    timeout: float,
    session: Any,
    guard: MemoryGuard | None,
    sandbox: Any,
) -> tuple[asyncio.subprocess.Process, _Output]:
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *pid_one.argv,
            cwd=str(session.workspace.root),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
            start_new_session=True,
            pass_fds=pid_one.pass_fds,
        )
    )
    try:
        # The process exists before the spawn's await returns: a turn cancelled in between
        # (twelve calls starting at once) lost it, and it ran on, orphaned, for its whole life.
        proc = await asyncio.shield(spawn)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            proc = await spawn
            _kill_group(proc, pid_one)
            await proc.wait()
        _undo(guard, sandbox)
        raise
    pid_one.started()
    output = _Output()
    reading = asyncio.ensure_future(output.read(proc.stdout))

    async def ended() -> None:  # the output closed and the shell exited, as communicate() waits
        await asyncio.shield(reading)
        await proc.wait()

    try:
        await asyncio.wait_for(ended(), timeout=timeout)
    except TimeoutError:
        _kill_group(proc, pid_one)
        with contextlib.suppress(TimeoutError, ValueError):
            await asyncio.wait_for(reading, timeout=2)
        await proc.wait()
        text = session.redact(output.data().decode("utf-8", "replace"))
        _undo(guard, sandbox)
        tail = f"\n{external(f'command:{cut(command)}', text[-2000:])}" if text else ""
        raise CommandTimeout(
            f"command timed out after {timeout:g}s (stopped): {cut(command)}{tail}",
            suggestion="pass a larger timeout, run a narrower command, or run it in the background with output to a file",
        ) from None
    except asyncio.CancelledError:
        _kill_group(proc, pid_one)
        reading.cancel()
        await proc.wait()
        _undo(guard, sandbox)
        raise
    return proc, output


def _undo(guard: MemoryGuard | None, sandbox: Any) -> tuple[list[str], list[str]]:
    """Undo what a command may not leave behind: guarded files, nested repositories it recorded."""
    links = getattr(sandbox, "gitlinks", None)
    nested = links.undo() if links is not None else []  # before a new nested .git is removed
    return guard.undo() if guard is not None else [], nested


TOOLS = [
    FunctionTool(
        ToolSpec(
            "run_command",
            "Run a shell command in the workspace root and return its exit code and combined "
            "output. Use it to run tests, linters, builds and git queries to verify changes. "
            "Commands may need the user's permission; network and destructive commands are "
            "refused in CI. Default timeout 120 s (max 1800). Not for reading or searching files "
            "(use read_file, grep, search_code).\n"
            'Example: {"command": "pytest -q tests/test_app.py", "timeout": 300}',
            schema(
                {
                    "command": {"type": "string", "minLength": 1},
                    "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT},
                },
                ["command"],
            ),
        ),
        "execute",
        run_command,
    ),
]
