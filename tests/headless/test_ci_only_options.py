"""Options that only mean something in `--ci` (or beside another option) are refused without it:
given alone, they did nothing and the run went on as if they had not been typed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_bad_input import kiln, one_line

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("option", "needs"),
    [
        (["--verify", "true"], "--verify needs --ci"),
        (["--artifacts", "out"], "--artifacts needs --ci"),
        (["--max-patch-mb", "5"], "--max-patch-mb needs --ci"),
        (["--author", "A <a@x.invalid>"], "--author needs --commit-branch"),
        (["--ci", "--author", "A <a@x.invalid>"], "--author needs --commit-branch"),
    ],
)
def test_an_option_that_would_do_nothing_is_refused(
    tmp_path: Path, kiln_home: Path, option: list[str], needs: str
) -> None:
    """`kiln run "fix it" --verify "pytest -q"` ran no verification and exited 0; `--author`
    without a branch to commit was dropped; both without a word."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {"KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    proc = kiln("run", "do it", *option, cwd=repo, env=env)
    assert needs in one_line(proc, 2)
    assert not (kiln_home / "sessions.db").exists()  # refused before any session began
    assert not (repo / "out").exists()


def test_the_json_result_of_a_refused_option(tmp_path: Path, kiln_home: Path) -> None:
    proc = kiln("run", "do it", "--verify", "true", "--output-format", "json", cwd=tmp_path)
    report = json.loads(proc.stdout)
    assert (report["exit_code"], report["stop_reason"]) == (2, "not_started")
    assert "--verify needs --ci" in report["error"]


def test_the_action_passes_its_default_author_only_with_a_branch(
    failing_repo: Path, tmp_path: Path
) -> None:
    """action.yml always sets an author (its input has a default) and a commit-branch only when
    asked: run.sh must not turn that default into `--author` without `--commit-branch`."""
    import os
    import sys

    script = tmp_path / "script.json"
    script.write_text(json.dumps(["Nothing to do for that."]))
    art = tmp_path / "art"
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "KILN_TASK": "look", "KILN_ARTIFACTS": str(art), "KILN_COMMIT_BRANCH": "",
           "KILN_AUTHOR": "Kiln <kiln@users.noreply.github.com>",
           "KILN_COMMAND": f"{sys.executable} -m lsp_server"}  # fmt: skip
    action = Path(__file__).resolve().parents[2] / "action" / "run.sh"
    proc = subprocess.run(["bash", str(action)], cwd=failing_repo, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads((art / "report.json").read_text())["outcome"] == "nothing to do"
