"""`kiln run "- fix the failing date test"`: a task copied from a changelog or a TODO list
starts with a dash; it is the task, as a query is for `kiln search`. A mistyped option is still
refused, never run as a task."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def run(root: Path, *args: str) -> subprocess.CompletedProcess:
    script = root.parent / "script.json"
    script.write_text(json.dumps(["done"]))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", *args],
        cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_task_that_starts_with_a_dash_is_the_task(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    proc = run(root, "- fix the failing date test", "--output-format", "json", "--max-steps", "3")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["task"] == "- fix the failing date test"
    # an option's value that reads like one stays that option's value
    proc = run(root, "--verify", "-x y", "--output-format", "json", "go")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["task"] == "go"


def test_a_mistyped_option_is_refused_not_run(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    proc = run(root, "--dryrun", "fix it")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("kiln: No such option") and "--dryrun" in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert proc.stdout == ""
