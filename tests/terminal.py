"""A command run on a real pseudo-terminal, for tests of what a user's terminal shows."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path


def run_on_terminal(
    args: list[str], *, env: dict[str, str], cwd: Path, typed: bytes | None = None, timeout=120
) -> tuple[int, str]:
    """Run ``args`` with stdout and stderr on a new terminal (and stdin too when ``typed`` is
    given: those keys are buffered before it starts); returns its exit code and everything it
    wrote there, until it closed the terminal."""
    leader, follower = pty.openpty()
    if typed is not None:
        os.write(leader, typed)
    proc = subprocess.Popen(
        args, cwd=cwd, env=env, stdout=follower, stderr=follower,
        stdin=follower if typed is not None else subprocess.DEVNULL,
    )  # fmt: skip
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    code = proc.wait(timeout=timeout)
    os.close(leader)
    return code, seen.decode("utf-8", "replace")
