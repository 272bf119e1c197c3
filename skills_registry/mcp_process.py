"""How a stdio MCP server's process is started and watched: it dies with Kiln, and its stderr
reaches ours through a pipe, escaped and capped. ``skills_registry.mcp_source`` speaks MCP to it.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from typing import Any

STDERR_CAP = 64 * 1024  # bytes of a stdio server's stderr passed on to ours
HEAD_BYTES = 4096  # of it kept, to tell why a server that ended at once did


class StderrHead:
    """The first ``HEAD_BYTES`` of a server's stderr; ``ended`` is set once the relay has read
    all of it (the server and every copy of the pipe closed)."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.ended = threading.Event()


def stderr_sink(name: str, head: StderrHead | None = None) -> Any:
    """Server stderr goes to our stderr, never stdout (stdout is JSON-RPC under ``kiln lsp``),
    through a pipe and that stream: given the descriptor itself, a server writes OSC 52 (the
    clipboard) or ANSI to the user's terminal raw when our stderr escapes control characters (a
    terminal, see ``lsp_server.cli.tty_guard``), and any amount of it (a server that printed
    50 MB filled the terminal or the editor's log). The first ``STDERR_CAP`` bytes pass, then
    one line says the rest is dropped. The caller closes the returned file once the server
    has started (the server holds its own copy). ``head`` keeps the first bytes."""
    return _relay(sys.stderr, name, head or StderrHead())


def _relay(stream: Any, name: str, head: StderrHead) -> Any:
    read_fd, write_fd = os.pipe()

    def pump() -> None:
        try:
            _pump(read_fd, stream, name, head)
        finally:
            head.ended.set()

    threading.Thread(target=pump, name=f"mcp-stderr:{name}", daemon=True).start()
    return os.fdopen(write_fd, "w")


def _pump(read_fd: int, stream: Any, name: str, head: StderrHead) -> None:
    passed = 0
    with os.fdopen(read_fd, "rb") as source:
        for chunk in iter(lambda: source.read1(65536), b""):
            head.data += chunk[: HEAD_BYTES - len(head.data)]
            if passed >= STDERR_CAP:
                continue  # read and dropped, so the server never blocks on a full pipe
            part, passed = chunk[: STDERR_CAP - passed], passed + len(chunk)
            stream.write(part.decode("utf-8", "replace"))
            if passed >= STDERR_CAP:
                stream.write(
                    f"\n[MCP server '{name}': stderr past {STDERR_CAP // 1024} KB dropped]\n"
                )
            stream.flush()


# Run in the child before the server: on Linux, the kernel sends it SIGKILL when Kiln dies, even
# by SIGKILL (the SDK's own clean-up never runs then), so a server that ignores SIGTERM and the
# end of its input is not left behind; then it becomes the server (``exec``: same process).
_PARENT_DEATH = """import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
if os.getppid() != int(sys.argv[1]):
    os._exit(1)
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    sys.stderr.write(f"{sys.argv[2]}: {exc.strerror}\\n")
    os._exit(127)
"""


def ends_with_us(argv: list[str], path: str | None) -> list[str]:
    """``argv`` started so that it dies with this process (Linux ``PR_SET_PDEATHSIG``); a
    command that is not there is left as it is, for the SDK's clear "No such file" error."""
    if not sys.platform.startswith("linux") or shutil.which(argv[0], path=path) is None:
        return argv
    return [sys.executable, "-I", "-c", _PARENT_DEATH, str(os.getpid()), *argv]


def default_env() -> dict[str, str]:
    """The environment the MCP SDK gives a stdio server by default (it passes few variables)."""
    from mcp.client.stdio import get_default_environment

    return dict(get_default_environment())
