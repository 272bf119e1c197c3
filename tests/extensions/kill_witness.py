"""Stands where a test runner or a terminal stands: the parent of ``nvim --embed``, in the same
process group as that Neovim. It records every SIGTERM, SIGINT and SIGHUP it receives while the
story below kills Neovim's ``kiln lsp`` and quits Neovim, then prints a JSON report.

``python kill_witness.py`` (run in a new session, so that nothing sent to this group can
reach the caller): a chat whose turn runs a long command; the server SIGKILLed mid-turn; the next
question (a new server) SIGTERMed mid-turn; a third turn left running when the user types
``:qa!``. The report says which signals arrived, whether Neovim answered after each kill, and
whether a tool line still showed as running, and which server processes and commands
outlived Neovim.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.extensions.nvim_ui import Editor, workspace_editor  # noqa: E402
from tests.waiting import processes_with, wait_until  # noqa: E402

MARKER = "kiln-witness-sleep"
received: list[str] = []


def record(signum: int, frame: object) -> None:
    received.append(signal.Signals(signum).name)


def run_long_command(ed: Editor, question: str) -> int:
    """Ask ``question``; once its command runs, the pid of the server that runs it."""
    ed.lua("require('kiln.chat').send(...)", question)
    ed.wait("the command to start", lambda: processes_with(MARKER), timeout=120)
    (server,) = ed.lua("return vim.api.nvim_get_proc_children(vim.fn.getpid())")
    return int(server)


def main() -> int:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, record)
    # A short folder: Neovim's own "Client kiln quit … Check log for errors: PATH" line is
    # wider than the screen under a test runner's long temp path, and waits for Enter.
    with tempfile.TemporaryDirectory(prefix="kw") as folder:
        return story(Path(folder))


def story(tmp: Path) -> int:
    home = tmp / "home"
    home.mkdir()
    run = {"name": "run_command", "input": {"command": f"sleep 300 # {MARKER}"}}
    steps = [{"text": "Running.", "tool_calls": [run]}] * 3
    ed = workspace_editor(tmp, home, steps)
    report: dict[str, object] = {}
    servers: list[int] = []
    try:
        ed.wait("the client", lambda: ed.lua("return #vim.lsp.get_clients({name='kiln'}) > 0"))
        ed.nvim.command("KilnMode yolo")
        for label, sig in (("SIGKILL", signal.SIGKILL), ("SIGTERM", signal.SIGTERM)):
            servers.append(run_long_command(ed, f"first {label}"))
            os.kill(servers[-1], sig)
            ed.wait(
                "the turn to end and the server to be gone",
                lambda: ed.lua(
                    "return not require('kiln.chat').state.busy"
                    " and #vim.lsp.get_clients({name='kiln'}) == 0"
                ),
                timeout=120,
            )
            report[f"neovim answers after {label}"] = ed.lua("return 1 + 1") == 2
            report[f"tool lines still running after {label}"] = [
                line for line in ed.transcript() if line.startswith(("  … ", "  ? "))
            ]
            report[f"tool lines after {label}"] = sum(MARKER in line for line in ed.transcript())
        servers.append(run_long_command(ed, "third"))
        ed.nvim.command("qa!", async_=True)
    finally:
        ed.close()
    gone = wait_until(lambda: not [p for p in servers if alive(p)] and not processes_with(MARKER))
    report["left running after :qa!"] = [] if gone else [p for p in servers if alive(p)]
    report["commands left"] = processes_with(MARKER)
    report["signals"] = received
    print(json.dumps(report))
    return 0


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


if __name__ == "__main__":
    raise SystemExit(main())
