"""`kiln run "- fix the failing date test"`: a task copied from a changelog or a TODO list
starts with a dash; it is the task, as a query is for `kiln search`. A mistyped option is still
refused, never run as a task."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.headless.test_run_exit import kiln

pytestmark = pytest.mark.e2e


def run(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`kiln run` on the scripted model, which answers "done"."""
    return kiln(root, ["done"], *args)


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
