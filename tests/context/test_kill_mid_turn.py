"""A `kiln run` killed in the middle of a turn (SIGKILL while the model answers its second step)
and then resumed: the steps the killed process paid for stay in the session's accounting, the
resumed turn numbers its steps and its turn after them instead of writing over them, and an edit
made before the kill stays among the session's files modified."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.session_store import SessionStore
from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns
from tests.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def killed_then_resumed(tmp_path: Path, first_step: dict[str, Any]) -> tuple[SessionStore, str, list, dict]:  # fmt: skip
    """Run a turn whose first step is ``first_step``, kill it while its second request is held,
    resume it with "go on": (the store, the session, its usage rows at the kill, the result)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    never = tmp_path / "never"  # the second request is held until the process is killed
    with WireServer([first_step, {"wait_for": str(never)}, "resumed answer"]) as srv:
        runs = KilnRuns(tmp_path, srv)
        cmd = [sys.executable, "-m", "lsp_server", "run", "--root", str(root), "--mode", "yolo",
               "--output-format", "json", "work on a.py"]  # fmt: skip
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
        runs.session = row["id"]
        result = runs.turn(root, "go on")
    assert result["result"] == "resumed answer"
    return store, row["id"], before, result


def test_a_turn_killed_mid_step_keeps_its_usage_after_resume(tmp_path: Path) -> None:
    read = {"tool_calls": [{"name": "read_file", "input": {"path": "a.py"}}]}
    store, session, before, _ = killed_then_resumed(tmp_path, read)
    assert [u["step"] for u in before] == [1]
    usage = store.usage(session)
    assert [(u["step"], u["turn"]) for u in usage] == [(1, 1), (3, 2)]
    assert before[0] in usage  # the killed step's row, unchanged
    assert [r["step"] for r in store.requests(session)] == [1, 2, 3]


def test_a_file_edited_before_the_kill_stays_among_the_files_modified(tmp_path: Path) -> None:
    """Compaction carries the session's files modified forward verbatim."""
    edit = {"tool_calls": [{"name": "edit_file",
                            "input": {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"}}]}  # fmt: skip
    _, _, _, result = killed_then_resumed(tmp_path, edit)
    assert (tmp_path / "ws" / "a.py").read_text() == "x = 2\n"
    assert result["files_modified"] == ["a.py"]
