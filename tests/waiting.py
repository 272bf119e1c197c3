"""Waiting on events outside a protocol: a condition that comes true (a file appears, a process
is gone). The timeouts are generous: they fire only when something is wrong, never as a
measure of speed, so a loaded machine waits longer instead of failing."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

POLL = 0.05
T = TypeVar("T")


async def until(predicate: Callable[[], Any], timeout: float = 60, what: str = "") -> None:
    """Wait until ``predicate()`` holds; AssertionError naming ``what`` when it never does."""

    async def wait() -> None:
        while not predicate():
            await asyncio.sleep(POLL)

    try:
        await asyncio.wait_for(wait(), timeout)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what or predicate}") from None


def wait_until(predicate: Callable[[], Any], timeout: float = 60) -> bool:
    """Whether ``predicate()`` came true within ``timeout`` seconds (for threads and processes
    outside an event loop)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(POLL)
    return bool(predicate())


def processes_with(marker: str, *, leading: bool = False) -> list[int]:
    """Live (not zombie) processes whose command line contains ``marker``. Commands in a
    sandbox run in their own PID namespace, so a test finds them by a marker, not a pid.
    ``leading``: only those whose command line starts with it (the program itself, not the
    sandbox or shell whose arguments name it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError, UnicodeDecodeError):
            continue
        named = cmdline.startswith(marker) if leading else marker in cmdline
        if named and state != "Z" and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


async def answer_when(
    ask: Callable[[], Awaitable[T]], ready: Callable[[T], Any], timeout: float = 60
) -> T:
    """Ask again until ``ready(answer)`` holds, and return that answer; past ``timeout``, the
    last answer, for the caller's assertion to show what it was."""
    deadline = time.monotonic() + timeout
    while True:
        answer = await ask()
        if ready(answer) or time.monotonic() > deadline:
            return answer
        await asyncio.sleep(POLL)
