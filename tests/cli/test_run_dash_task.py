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
    proc = run(root, "--model", "-x y", "--output-format", "json", "go")
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


@pytest.mark.parametrize("args", [["-"], ["--task-file", "-"]])
def test_a_dash_reads_the_task_from_stdin(tmp_path: Path, args: list[str]) -> None:
    """`tail -200 build.log | kiln run --ci -`: the task "-" was sent to the model as it is."""
    root = tmp_path / "ws"
    root.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    call = [sys.executable, "-m", "lsp_server", "run", "--output-format", "json", *args]

    def feed(data: bytes) -> subprocess.CompletedProcess:
        return subprocess.run(call, cwd=root, env=env, input=data, capture_output=True,
                              timeout=120)  # fmt: skip

    proc = feed(b"FAILED tests/test_dates.py::test_leap\nfix it\n")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["task"] == "FAILED tests/test_dates.py::test_leap\nfix it\n"
    for data, line in ((b"\xff\xfe", "kiln: stdin is not UTF-8 text\n"),
                       (b"", "kiln: the task is empty\n")):  # fmt: skip
        refused = feed(data)
        assert refused.returncode == 2 and refused.stderr.decode() == line
