"""A `kiln run` killed in the middle of a turn (SIGKILL while the model answers its second step)
and then resumed: the steps the killed process paid for stay in the session's accounting, and
the resumed turn numbers its steps and its turn after them instead of writing over them."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agent.session_store import SessionStore
from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns
from tests.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_turn_killed_mid_step_keeps_its_usage_after_resume(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    never = tmp_path / "never"  # the second request is held until the process is killed
    read = {"tool_calls": [{"name": "read_file", "input": {"path": "a.py"}}]}
    with WireServer([read, {"wait_for": str(never)}, "resumed answer"]) as srv:
        runs = KilnRuns(tmp_path, srv)
        cmd = [sys.executable, "-m", "lsp_server", "run", "--root", str(root), "--mode", "yolo",
               "--output-format", "json", "read a.py"]  # fmt: skip
        proc = subprocess.Popen(cmd, env=runs.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            assert wait_until(lambda: len(runs.raws()) == 2, timeout=120)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        store = SessionStore(tmp_path / "home" / "sessions.db")
        (row,) = store.recent()
        before = store.usage(row["id"])
        assert [u["step"] for u in before] == [1]
        runs.session = row["id"]
        result = runs.turn(root, "go on")
    assert result["result"] == "resumed answer"
    usage = store.usage(row["id"])
    assert [(u["step"], u["turn"]) for u in usage] == [(1, 1), (3, 2)]
    assert before[0] in usage  # the killed step's row, unchanged
    assert [r["step"] for r in store.requests(row["id"])] == [1, 2, 3]


def test_a_file_edited_before_the_kill_stays_among_the_files_modified(tmp_path: Path) -> None:
    """Compaction carries the session's files modified forward verbatim; an edit made before
    the process was killed must be among them after the resume, as it is on disk."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    never = tmp_path / "never"
    edit = {"tool_calls": [{"name": "edit_file",
                            "input": {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"}}]}  # fmt: skip
    with WireServer([edit, {"wait_for": str(never)}, "resumed answer"]) as srv:
        runs = KilnRuns(tmp_path, srv)
        cmd = [sys.executable, "-m", "lsp_server", "run", "--root", str(root), "--mode", "yolo",
               "--output-format", "json", "edit a.py"]  # fmt: skip
        proc = subprocess.Popen(cmd, env=runs.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            assert wait_until(lambda: len(runs.raws()) == 2, timeout=120)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        assert (root / "a.py").read_text() == "x = 2\n"
        (row,) = SessionStore(tmp_path / "home" / "sessions.db").recent()
        runs.session = row["id"]
        result = runs.turn(root, "go on")
    assert result["files_modified"] == ["a.py"]
