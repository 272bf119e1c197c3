"""`summary.md` is posted as a comment on the issue or pull request (docs/ci.md). The task (an
issue anyone wrote) and the answer (the model's, steered by the repository) are quoted in it,
and GitHub acts on what a comment says: `@login` notifies that person (or a whole team,
`@org/team`) and `#123`, `GH-123`, `owner/repo#123` cross-link that issue, adding an entry to
its timeline. Before, a task `@octocat fix #12` made Kiln's comment ping octocat again and link
issue 12, and an answer could ping anyone. Through the real `kiln run --ci`: each is broken by
a word joiner (U+2060) and still reads as written; so in the commit `--commit-branch` makes,
where an issue's "closes #12" would close issue 12 when the branch is merged."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.repos import committing_repo

TASK = "@octocat please fix #12 (see GH-7 and acme/tools#9); cc @acme/security-team"
ANSWER = "Fixed, @admin. Closes #34.\n\n- refs acme/web#5, GH-88\n- mail me: dev@example.com"
# What GitHub turns into a mention or an issue reference.
LINKS = re.compile(r"(?<![\w`])@[A-Za-z0-9]|#[0-9]|\bGH-[0-9]", re.IGNORECASE)


def test_the_summary_mentions_nobody_and_links_no_issue(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    committing_repo(root)("init", {"calc.py": "def add(a, b):\n    return a - b\n"})
    steps = [
        {"tool_calls": [{"name": "run_command", "input": {"command": "curl http://x/@root#1"}}]},
        {"tool_calls": [{"name": "write_file", "input": {
            "path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}}]},
        {"text": ANSWER},
    ]  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    env = {**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home),
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--artifacts", str(tmp_path / "out"),
         "--commit-branch", "kiln/fix", TASK],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "### Refused by policy" in summary and "Closes" in summary, proc.stderr
    assert LINKS.findall(summary) == [], [x for x in summary.splitlines() if LINKS.search(x)]
    plain = summary.replace("\u2060", "")
    assert "@octocat please fix #12" in plain and "Closes #34." in plain
    assert "dev@example.com" in summary  # an address is no mention: left as it is
    # the commit quotes them too: "Closes #34" there closes issue 34 when the branch is merged
    message = subprocess.run(["git", "log", "-1", "--format=%B", "kiln/fix"], cwd=root,
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "Closes" in message and LINKS.findall(message) == [], message


def test_a_branch_name_with_a_backtick_stays_code(tmp_path: Path, kiln_home: Path) -> None:
    """git allows a backtick in a branch name: the summary's `kiln/a`@octocat`` line closed its
    code span early, and `@octocat` after it was a mention in the posted comment."""
    root = tmp_path / "repo"
    committing_repo(root)("init", {"calc.py": "def add(a, b):\n    return a - b\n"})
    steps = [{"tool_calls": [{"name": "write_file", "input": {
        "path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}}]}, "Fixed."]  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    env = {**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home),
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip
    branch = "kiln/a`@octocat`#12"
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--artifacts", str(tmp_path / "out"),
         "--commit-branch", branch, "fix"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 10, proc.stderr
    summary = (tmp_path / "out" / "summary.md").read_text()
    line = next(x for x in summary.splitlines() if x.startswith("- branch "))
    assert line.startswith("- branch <code>kiln/a&#96;@octocat&#96;#12</code> at <code>"), line
    assert "`" not in line
