"""A git config include that names a FIFO, through the real `kiln run --ci`: git opens each
included file with a blocking `open()`, so every host-side git call that reads the config (the
alias lookup of the command check, the guards' reads after each command) waited its whole
timeout, 20 s, before the refusal came. Such a file is found first and never opened: the
refusal comes at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.repos import git

pytestmark = pytest.mark.e2e

EDIT = "# the user's uncommitted work\n"


def _run(repo: Path, *commands: str) -> tuple[subprocess.CompletedProcess, float]:
    script = repo.parent / "script.json"
    steps = [{"tool_calls": [{"name": "run_command", "input": {"command": c}}]} for c in commands]
    script.write_text(json.dumps([*steps, "Done."]))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--output-format",
         "json", "--artifacts", str(repo.parent / "out"), "tidy up"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return proc, time.monotonic() - started


def test_an_alias_lookup_through_a_fifo_include_is_refused_at_once(failing_repo: Path) -> None:
    """`git -c include.path=$PWD/p co calc.py` after `mkfifo p`: `co` is no git command, so the
    check asks git what the alias is, and git waited on the FIFO 20 s, for each such command,
    before the refusal (twice here: 40 s)."""
    (failing_repo / "calc.py").write_text((failing_repo / "calc.py").read_text() + EDIT)
    fifo = failing_repo / "p"
    line = f"git -c include.path={fifo} co calc.py"
    proc, took = _run(failing_repo, "mkfifo p", line, line)
    assert proc.returncode == 5, proc.stderr
    refused = [r for r in json.loads(proc.stdout)["refusals"] if r["tool"] == "run_command"]
    assert [r["arguments"]["command"] for r in refused] == [line, line]
    assert took < 20, f"the run took {took:.0f} s"
    assert (failing_repo / "calc.py").read_text().endswith(EDIT)


def test_a_fifo_in_place_of_an_included_config_costs_no_wait(failing_repo: Path) -> None:
    """`include.path = ../local.gitconfig` (a file the user may add): a command that makes it a
    FIFO has it removed after the command, but the guard's reading of the config, before that,
    waited 20 s on it (twice here: 40 s)."""
    git(failing_repo, "config", "include.path", "../local.gitconfig")
    proc, took = _run(failing_repo, "mkfifo local.gitconfig", "mkfifo local.gitconfig")
    assert proc.returncode == 5, proc.stderr
    reasons = [r["reason"] for r in json.loads(proc.stdout)["refusals"]]
    assert reasons == ["local.gitconfig was created by the command; removed"] * 2
    assert not os.path.lexists(failing_repo / "local.gitconfig")
    assert took < 20, f"the run took {took:.0f} s"


def test_a_fifo_a_command_left_in_the_git_folder_ends_the_run_at_once(failing_repo: Path) -> None:
    """A FIFO written into `.git` past the command check (by a program, not a redirection):
    Kiln's git calls at the end waited 20 s on it before failing; now one line at once, exit 1,
    with the summary and the report written and no patch."""
    make = "import os; os.mkfifo('.git/objects/info/alternates')"
    proc, took = _run(failing_repo, f'python3 -c "{make}"')
    assert proc.returncode == 1, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert "alternates: a FIFO in git's folder, which git would wait on" in error
    assert took < 15, f"the run took {took:.0f} s"
    assert (failing_repo.parent / "out" / "summary.md").is_file()
    assert not (failing_repo.parent / "out" / "changes.patch").exists()
