"""`kiln run --max-steps N` takes N from 1 to 10,000, as an editor session's `maxSteps` does
(README, docs/ci.md). It had no upper bound: `--max-steps 1000000000` was taken as a limit no run
reaches. A number past it is now refused in one line with exit 2, before any session starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.session_store import SessionStore
from tests.headless.test_run_exit import kiln

pytestmark = pytest.mark.e2e


def _sessions() -> list[str]:
    store = SessionStore()  # the KILN_HOME the runs used
    try:
        return [r["id"] for r in store.recent(limit=10)]
    finally:
        store.close()


@pytest.mark.parametrize("steps", ["10001", "1000000000", "9" * 40, "0", "-1"])
def test_a_step_limit_outside_1_to_10000_is_one_line_and_exit_2(tmp_path: Path, steps: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    proc = kiln(root, ["done"], "--max-steps", steps, "fix it")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, proc.stderr
    assert "--max-steps" in line and "1<=x<=10000" in line, line
    assert proc.stdout == ""
    assert _sessions() == []  # refused before a session was stored


def test_the_bounds_themselves_are_taken(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for steps in ("1", "10000"):
        proc = kiln(root, ["done"], "--max-steps", steps, "--output-format", "json", "hello")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["is_error"] is False
