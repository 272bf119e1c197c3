"""Exit codes of a plain `kiln run` (docs/ci.md): 0 when the turn finished, 5 when an action was
refused — here a question with no terminal to ask it in."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.headless.test_run_ci import call

pytestmark = pytest.mark.e2e


def kiln(root: Path, script: list, *args: str) -> subprocess.CompletedProcess:
    """`kiln run` with no terminal on stdin (what a pipeline gives it)."""
    script_path = root.parent / "script.json"
    script_path.write_text(json.dumps(script))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script_path)}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", *args],
        cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_plain_run_exits_0_when_finished_and_5_when_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    script = [call("run_command", command="touch made.txt"), "done"]
    asked = kiln(root, script, "--mode", "ask", "go")
    assert asked.returncode == 5, asked.stderr
    assert "nobody to ask (no terminal)" in asked.stdout + asked.stderr
    assert not (root / "made.txt").exists()

    # in auto-edit a command still asks: the hint names the mode that allows commands
    edits = kiln(root, script, "--mode", "auto-edit", "go")
    assert edits.returncode == 5 and "yolo: commands too" in edits.stdout + edits.stderr

    finished = kiln(root, [call("list_files"), "done"], "--mode", "ask", "go")
    assert finished.returncode == 0, finished.stderr


def test_ci_says_that_it_ignores_a_mode(tmp_path: Path) -> None:
    """`--ci` always runs with ci permissions; a `--mode` beside it is named as ignored, so a
    user who asked for yolo is not left believing they got it."""
    root = tmp_path / "ws"
    root.mkdir()
    script = [call("write_file", path=".kiln/settings.json", content="{}"), "done"]
    run = kiln(root, script, "--ci", "--mode", "yolo", "go")
    assert "kiln: --ci runs with ci permissions; --mode yolo is ignored" in run.stderr
    assert not (root / ".kiln" / "settings.json").exists()  # ci refuses settings; yolo would not
    quiet = kiln(root, ["done"], "--ci", "go")
    assert "is ignored" not in quiet.stderr


def test_the_exit_code_table_lists_every_code_kiln_run_exits_with() -> None:
    """docs/ci.md's table and the Action's `exit-code` output name every code: 141 (the reader
    of the output left) was only in a paragraph, and a pipeline's `case` missed it."""
    from lsp_server.headless import exit_codes
    from lsp_server.headless.render import BROKEN_PIPE

    repo = Path(__file__).resolve().parents[2]
    text = (repo / "docs" / "ci.md").read_text().split("## Exit codes", 1)[1].split("\n## ")[0]
    table = {int(row.split("|")[1]) for row in text.splitlines() if row[:3].strip("| ").isdigit()}
    assert table == {*exit_codes.MEANING, BROKEN_PIPE}
    action = (repo / "action.yml").read_text().split("exit-code:", 1)[1].split("value:")[0]
    assert {int(n) for n in re.findall(r"\b(\d+) [a-z]", action)} == table
