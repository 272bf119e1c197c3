"""The user's stash through the real `kiln run --ci`: `git stash drop` and `git stash clear`
are refused, but the entries are the reflog of `refs/stash`, which other commands rewrite. Each
of these ran and threw the stashed work away, the run saying "nothing to do" (exit 11); the
stash is now put back as it was and the change named among the refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repos import git

pytestmark = pytest.mark.e2e

PUT_BACK = "the stash list was changed during the run; put back"


def _stashed(repo: Path) -> str:
    """Two stash entries of the user's; returns `git stash list`."""
    for n in (1, 2):
        (repo / "calc.py").write_text((repo / "calc.py").read_text() + f"# stashed {n}\n")
        git(repo, "stash", "push", "-qm", f"work {n}")
    return git(repo, "stash", "list")


@pytest.mark.parametrize(
    "command",
    ["git reflog delete refs/stash@{0}", "git reflog expire --expire=now --all",
     "git update-ref -d refs/stash", "rm .git/logs/refs/stash",
     "git update-ref refs/stash HEAD"],  # the restored ref added an entry of its own
)  # fmt: skip
def test_a_stash_the_run_rewrote_is_put_back(failing_repo: Path, command: str) -> None:
    listed = _stashed(failing_repo)
    script = failing_repo.parent / "script.json"
    step = {"tool_calls": [{"name": "run_command", "input": {"command": command}}]}
    script.write_text(json.dumps([step, "Done."]))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--output-format", "json",
         "--artifacts", str(failing_repo.parent / "out"), "tidy up"],
        cwd=failing_repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 5, proc.stderr
    assert PUT_BACK in [r["reason"] for r in json.loads(proc.stdout)["refusals"]]
    assert git(failing_repo, "stash", "list") == listed
    assert "+# stashed 1" in git(failing_repo, "stash", "show", "-p", "stash@{1}")
