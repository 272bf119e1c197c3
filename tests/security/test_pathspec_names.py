"""Kiln's `--ci` patch and branch name the changed files to `git add` as pathspecs, and git
reads a pathspec as a pattern: a file the agent names `gha-creds-*.json` (or `[g]ha…`, or
`:(glob)**`) matched every file of that shape, among them files that were in the checkout before
the run and are not its work — google-github-actions/auth writes the job's cloud key into the
workspace as `gha-creds-<random>.json`. Before, that key went into `changes.patch`, the summary
and the branch a workflow pushes. Through the real `kiln run --ci --commit-branch`: names are
literal (docs/security.md section 8)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.repos import committing_repo
from tests.security.scripted_run import kiln_run

KEY = '{"type": "service_account", "private_key": "pathspec-canary-7f3e"}\n'


@pytest.mark.parametrize("name", ["gha-creds-*.json", "[g]ha-creds-1234.json", ":(glob)**"])
def test_a_file_named_like_a_pattern_takes_no_other_file_along(
    tmp_path: Path, kiln_home: Path, name: str
) -> None:
    root = tmp_path / "repo"
    committing_repo(root)("init", {"calc.py": "def add(a, b):\n    return a - b\n"})
    (root / "gha-creds-1234.json").write_text(KEY)  # the workflow's, there before the run
    steps = [
        {"tool_calls": [{"name": "write_file", "input": {"path": name, "content": "x\n"}}]},
        {"tool_calls": [{"name": "edit_file", "input": {
            "path": "calc.py", "old_text": "a - b", "new_text": "a + b"}}]},
        "Fixed.",
    ]  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    out = tmp_path / "out"
    proc = kiln_run(
        root, home=tmp_path, kiln_home=kiln_home, script=script, mode="ci",
        extra=("--ci", "--commit-branch", "kiln/fix", "--artifacts", str(out), "--no-sandbox"),
    )  # fmt: skip
    assert proc.returncode == 10, proc.stderr
    patch = (out / "changes.patch").read_text()
    assert "a + b" in patch and "pathspec-canary" not in patch, patch
    assert "pathspec-canary" not in (out / "summary.md").read_text()
    committed = subprocess.run(["git", "show", "--name-only", "--format=", "kiln/fix"], cwd=root,
                               capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert sorted(committed.split("\n")[:-1]) == sorted(["calc.py", name]), committed
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    assert "?? gha-creds-1234.json" in status, status  # still the workflow's, untracked
