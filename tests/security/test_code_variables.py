"""A rule that allows `git diff *` or `ls *` allows those programs, not whatever a variable set on
the line makes them run: `GIT_EXTERNAL_DIFF=./tools/diff.sh git diff` ran the repository's script
and `PATH=.:$PATH ls -la` the repository's own `ls`, unasked in `ask` mode (docs/security.md
section 3). Through the real `kiln run --mode ask` on a terminal, the user declining each
question: both are asked now, and nothing the repository ships runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.terminal import run_on_terminal

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


def test_variables_that_change_what_runs_are_asked(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    (root / "tools").mkdir(parents=True)
    for name, marker in (("tools/diff.sh", "diff-ran"), ("ls", "ls-ran")):
        (root / name).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (root / name).chmod(0o755)
    (root / "app.py").write_text("x = 1\n")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    (root / "app.py").write_text("x = 2\n")  # something for git diff to show
    allow = {"permissions": {"allow": ["Bash(git diff *)", "Bash(ls *)"]}}
    (kiln_home / "settings.json").write_text(json.dumps(allow))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "run_command",
                         "input": {"command": "GIT_EXTERNAL_DIFF=./tools/diff.sh git diff app.py"}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": "PATH=.:$PATH ls -la"}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": "git diff app.py"}}]},
        "done",
    ]))  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home), "TERM": "dumb",
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip
    _, shown = run_on_terminal(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "ask", "go"],
        env=env, cwd=root, typed=b"n\nn\n",  # decline both questions
    )  # fmt: skip
    assert not (root / "diff-ran").exists() and not (root / "ls-ran").exists(), shown
    assert shown.count("Allow run_command") == 2, shown
    plain = shown.split("run_command: git diff app.py")[-1]
    assert "Allow" not in plain and "exit code 0" in plain, shown  # the plain git diff: unasked


@pytest.mark.parametrize(("command", "asked"), [
    ("HOME=. git diff app.py", True),  # git reads ./.gitconfig: diff.external
    ("XDG_CONFIG_HOME=cfg git diff app.py", True),  # git reads cfg/git/config
    ("for PATH in .:/usr/bin:/bin; do ls -la; done", True),
    ("read PATH < path.txt; ls -la", True),
    # a bare repository shipped in the checkout: git takes its config when run inside it
    ("cd vendor/evil && git diff HEAD~1 HEAD", False),
])  # fmt: skip
def test_other_ways_to_make_git_or_ls_run_the_repositorys_program(
    tmp_path: Path, kiln_home: Path, command: str, asked: bool
) -> None:
    """A home folder or config folder of the repository's makes git read its config, which
    names a program; `for` and `read` set `PATH` as an assignment does; a folder shaped like a
    bare repository (`HEAD`, `config`, `objects`: plain files git can ship) is one to git run
    inside it. Before, each ran the repository's script under rules allowing `cd *`,
    `git diff *`, `ls *` and `read *`, unasked. Now the first four are asked, and commands' git
    uses a bare repository only when `--git-dir` names it (`safe.bareRepository=explicit`)."""
    root = tmp_path / "repo"
    (root / "tools").mkdir(parents=True)
    for name in ("tools/diff.sh", "ls"):
        (root / name).write_text(f"#!/bin/sh\ntouch {root}/ran\n")
        (root / name).chmod(0o755)
    config = f"[diff]\n\texternal = {root}/tools/diff.sh\n"
    (root / ".gitconfig").write_text(config)
    (root / "cfg" / "git").mkdir(parents=True)
    (root / "cfg" / "git" / "config").write_text(config)
    (root / "path.txt").write_text(".:/usr/bin:/bin\n")
    (root / "app.py").write_text("x = 1\n")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for text in ("x = 0\n", "x = 1\n"):
        (root / "app.py").write_text(text)
        subprocess.run([*git, "add", "app.py"], check=True)
        subprocess.run([*git, "commit", "-qm", text], check=True)
    bare = root / "vendor" / "evil"
    subprocess.run(["git", "clone", "-q", "--bare", str(root), str(bare)], check=True)
    (bare / "config").write_text((bare / "config").read_text() + config)
    (root / "app.py").write_text("x = 2\n")
    allow = {"permissions": {"allow": ["Bash(git diff *)", "Bash(ls *)", "Bash(read *)",
                                       "Bash(cd *)"]}}  # fmt: skip
    (kiln_home / "settings.json").write_text(json.dumps(allow))
    script = tmp_path / "script.json"
    script.write_text(json.dumps(
        [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "done"]
    ))  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home), "TERM": "dumb",
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip
    _, shown = run_on_terminal(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "ask", "go"],
        env=env, cwd=root, typed=b"n\n",
    )  # fmt: skip
    assert not (root / "ran").exists(), shown
    assert ("Allow run_command" in shown) is asked, shown
