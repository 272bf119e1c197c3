"""A memory file that did not exist when the session began and is created while it runs (the
first `kiln memory add` in a project, or `--user`) reaches the model at the tail of the next
turn, as an edited one does; the first message, and so the cached prefix, stays as it was."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns, breaks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROJECT = "memory-rule: run tests with uv run pytest"
USER = "memory-rule: answer in French"


def memory_add(runs: KilnRuns, root: Path, *args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "lsp_server", "memory", "add", *args,
                           "--root", str(root)], env=runs.env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_a_memory_file_created_during_the_session_is_sent_once(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    with WireServer(["one", "two", "three"]) as server:
        runs = KilnRuns(tmp_path, server)
        runs.turn(root, "first")
        memory_add(runs, root, PROJECT)
        memory_add(runs, root, USER, "--user")
        runs.turn(root, "second")
        runs.turn(root, "third")
        raws = [r.decode() for r in runs.raws()]
    assert breaks([r.encode() for r in raws]) == []
    assert PROJECT not in raws[0] and USER not in raws[0]
    for text in (PROJECT, USER):
        assert raws[1].count(text) == 1 and raws[2].count(text) == 1  # sent once, then kept
        assert raws[1].index(text) < raws[1].index("second")
    assert raws[1].count("created during the session") == 2
