"""The ``--verify`` command of a CI run, before and after the agent: in its own process group
(in the session's sandbox when there is one), bounded in time by what ``--max-minutes`` leaves,
and in memory: only the output's tail is kept, read as it comes, so a test suite that prints
hundreds of megabytes costs a few kilobytes. When the command's shell exits, what it left
running in its group (a server started with ``&``) is ended with it; a process that left the
group and still holds the output open is not waited for."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.sandbox.pid_one import PidOne

VERIFY_TIMEOUT = 1800.0  # seconds for one verification, whatever --max-minutes leaves
TAIL_BYTES = 64 * 1024  # of output kept while it streams
TAIL_LINES = 15
LINE_CHARS = 400  # a line of the tail longer than this is cut
DRAIN_SECONDS = 5.0  # reading what is left after the command ended


@dataclass(frozen=True)
class Deadline:
    """The end of the run that ``--max-minutes`` sets (None: no limit)."""

    deadline: float | None = None
    started: float = field(default_factory=time.monotonic)  # when the run began

    @classmethod
    def after(cls, minutes: float | None) -> Deadline:
        return cls(time.monotonic() + minutes * 60 if minutes else None)

    def left(self, cap: float = VERIFY_TIMEOUT) -> float:
        """Seconds left before the deadline (at least a moment), at most ``cap``."""
        if self.deadline is None:
            return cap
        return max(0.001, min(cap, self.deadline - time.monotonic()))

    def agent_seconds(self, before: Verification | None = None) -> float | None:
        """What the agent gets: what is left, less the time kept for the verification after
        (twice what the one before took, plus 10 s, at most half of what is left). Before, the
        agent could spend it all and the run ended unverified."""
        if self.deadline is None:
            return None
        left = self.left(math.inf)
        if before is None:
            return left
        return left - min(left / 2, 2 * before.seconds + 10)

    def over(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline


@dataclass
class Verification:
    command: str
    passed: bool
    exit_code: int
    seconds: float
    tail: str
    timed_out: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "passed": self.passed,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 2),
            "tail": self.tail,
        }


class _Tail:
    """The last ``TAIL_BYTES`` of a stream, read in a thread until it ends."""

    def __init__(self, fd: int) -> None:
        self.data = bytearray()
        self.total = 0
        self.thread = threading.Thread(target=self._read, args=(fd,), daemon=True)
        self.thread.start()

    def _read(self, fd: int) -> None:
        try:
            while piece := os.read(fd, 1 << 16):
                self.total += len(piece)
                self.data += piece
                if len(self.data) > 2 * TAIL_BYTES:
                    del self.data[:-TAIL_BYTES]
        except OSError:
            pass
        finally:
            os.close(fd)

    def text(self) -> str:
        """At most ``TAIL_LINES`` lines of at most ``LINE_CHARS`` characters, the note of what
        came before and the mark of a cut line included (docs/ci.md says so: the note made a
        16th line and the mark a 402-character one)."""
        data = bytes(self.data[-TAIL_BYTES:])
        before = self.total > len(data)
        lines = data.decode("utf-8", "replace").strip().splitlines()[before - TAIL_LINES :]
        cut = [x if len(x) <= LINE_CHARS else x[: LINE_CHARS - 2] + " …" for x in lines]
        if before:
            cut.insert(0, f"[… {self.total - len(data):,} bytes of output before]")
        return "\n".join(cut)


def run_verify(
    command: str,
    root: Path,
    timeout: float = VERIFY_TIMEOUT,
    env: dict[str, str] | None = None,
    sandbox: Any = None,
) -> Verification:
    """Run the verification command in its own process group, killed whole when it ends, on
    timeout or on Ctrl-C; inside the session's sandbox when one is given (the command comes
    from the repository's side of the trust line as much as any other)."""
    started = time.monotonic()
    full_env = {**os.environ, **(env or {})}
    argv = ["/bin/sh", "-c", command]
    if sandbox is not None:
        argv, full_env = sandbox.shell(command, cwd=root), sandbox.env(full_env)
    code, text, timed_out = _run(argv, root, full_env, timeout, sandbox)
    if sandbox is not None and sandbox.went_away(argv, code, text):
        # A path the sandbox covers went away between building its mounts and bwrap's start:
        # the command never ran; built again, it runs.
        argv = sandbox.shell(command, cwd=root)
        code, text, timed_out = _run(argv, root, full_env, timeout, sandbox)
    if timed_out:
        text += f"\n[timed out after {round(timeout, 2):g}s]"  # as its ``seconds`` is rounded
    return Verification(command, code == 0, code, time.monotonic() - started, text, timed_out)


def _run(
    argv: list[str], root: Path, env: dict[str, str], timeout: float, sandbox: Any
) -> tuple[int, str, bool]:
    """Exit code, output tail and whether it timed out, of ``argv`` run in its own process group
    (killed with its sandbox's pid 1, which may have left it: ``agent.sandbox.pid_one``)."""
    pid_one = PidOne.of(argv, sandbox)
    try:
        return _run_tracked(pid_one, root, env, timeout)
    finally:
        pid_one.close()


def _run_tracked(
    pid_one: PidOne, root: Path, env: dict[str, str], timeout: float
) -> tuple[int, str, bool]:
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(pid_one.argv, cwd=root, stdin=subprocess.DEVNULL, stdout=write_fd,
                                stderr=write_fd, env=env, start_new_session=True,
                                pass_fds=pid_one.pass_fds)  # fmt: skip
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
        pid_one.started()
    tail = _Tail(read_fd)
    timed_out = False
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out, code = True, 124
    finally:  # the group goes with its shell (background jobs), and on timeout or Ctrl-C
        _kill_group(proc)
        pid_one.kill()
        proc.wait()
    tail.thread.join(DRAIN_SECONDS)
    return code, tail.text(), timed_out


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
