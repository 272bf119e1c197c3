"""The user's stash through the real `kiln run --ci`: `git stash drop` and `git stash clear`
are refused, but the entries are the reflog of `refs/stash`, which other commands rewrite. Each
of these ran and threw the stashed work away, the run saying "nothing to do" (exit 11); the
stash is now put back as it was and the change named among the refusals. Likewise a git folder
whose `refs` or `HEAD` a program removed: made again, so that the refs can be put back."""

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
     "git update-ref -d refs/stash",
     # the shell check refuses `rm .git/logs/...` itself; a program is not read
     "python3 -c \"import os; os.remove('.git/logs/refs/stash')\"",
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


@pytest.mark.parametrize(
    ("program", "made"),
    [("import shutil; shutil.rmtree('.git/refs')",
      [".git/refs/", ".git/refs/heads/", ".git/refs/tags/"]),
     ("import os; os.remove('.git/HEAD')", [".git/HEAD"])],
)  # fmt: skip
def test_a_git_folder_a_program_broke_gets_its_branches_back(
    failing_repo: Path, program: str, made: list[str]
) -> None:
    """A program of the run (past the command check) removed `.git/refs` or `.git/HEAD`: git no
    longer knew the repository, the refs could not be put back, and the run ended with exit 1
    and the user's branches gone. The parts are made again and every ref put back."""
    git(failing_repo, "branch", "feature")
    refs = git(failing_repo, "for-each-ref")
    script = failing_repo.parent / "script.json"
    step = {
        "tool_calls": [{"name": "run_command", "input": {"command": f'python3 -c "{program}"'}}]
    }
    script.write_text(json.dumps([step, "Done."]))
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--output-format", "json",
         "--artifacts", str(failing_repo.parent / "out"), "tidy up"],
        cwd=failing_repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 5, proc.stderr
    reasons = [r["reason"] for r in json.loads(proc.stdout)["refusals"]]
    assert reasons[: len(made)] == [f"{m} was changed during the run; put back" for m in made]
    assert git(failing_repo, "for-each-ref") == refs
    assert git(failing_repo, "symbolic-ref", "HEAD") == "refs/heads/main\n"
