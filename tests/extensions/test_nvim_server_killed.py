"""A ``kiln lsp`` killed under Neovim (SIGKILL or SIGTERM, mid-turn, while a command runs) and a
Neovim quit during a turn: no signal reaches Neovim or whatever started it, the chat's tool line
stops showing as running (and the next session's call of the same id gets a line of its own),
and nothing of Kiln outlives Neovim. Neovim starts the server in a session of its own (``vim.lsp.start``'s detached
spawn), so the server's and its commands' process groups are never the editor's.

The story runs in ``kill_witness.py``, started in a new session: it is Neovim's parent and
shares its process group, as a test runner or a terminal shell does, and reports what reached
it; a signal sent to that group can then never reach the test runner."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.extensions.nvim_ui import nvim_path

pytestmark = [pytest.mark.e2e]

WITNESS = Path(__file__).with_name("kill_witness.py")


def test_killing_the_server_reaches_neither_neovim_nor_its_parent() -> None:
    nvim_path()
    env = {**os.environ, "PYTHONPATH": str(WITNESS.parents[2])}
    done = subprocess.run(
        [sys.executable, str(WITNESS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        start_new_session=True,
    )
    if done.returncode < 0:
        pytest.fail(f"Neovim's parent was ended by {signal.Signals(-done.returncode).name}")
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {
        "neovim answers after SIGKILL": True,
        "tool lines still running after SIGKILL": [],
        "tool lines after SIGKILL": 1,
        "neovim answers after SIGTERM": True,
        "tool lines still running after SIGTERM": [],
        "tool lines after SIGTERM": 2,
        "left running after :qa!": [],
        "commands left": [],
        "signals": [],
    }, done.stderr[-3000:]
