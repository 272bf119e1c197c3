"""`kiln run --resume`: the report counts this run, as --max-steps does (`steps` beside the
run's own tokens and cost), not every model call the session made before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def run(root: Path, script: list, *args: str) -> dict:
    script_path = root.parent / "script.json"
    script_path.write_text(json.dumps(script))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--output-format", "json", *args],
        cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_resumed_run_reports_its_own_steps(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    listing = {"text": "", "tool_calls": [{"name": "list_files", "input": {}}]}
    first = run(root, [listing, listing, "first answer"], "look around")
    assert first["steps"] == 3
    again = run(root, ["second answer"], "--resume", first["session_id"], "and now?")
    assert again["session_id"] == first["session_id"] and again["result"] == "second answer"
    assert again["steps"] == 1, again
