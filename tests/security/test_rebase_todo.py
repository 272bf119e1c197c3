"""A rebase a command leaves in progress keeps its plan in `.git/rebase-merge/git-rebase-todo`,
and the user's own `git rebase --continue` runs every `exec` line there on the host, outside the
sandbox. A `git rebase --exec 'sh hook.sh' main` that stops on a conflict, or a todo a command
appends to, had the user run the repository's script with their keys when they finished the
rebase (docs/security.md section 4). Now an `exec` line a command added is a comment when it ends.
Through the real `kiln run --mode ci`, then the user's plain `git rebase --continue`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

APPEND = (
    "git rebase main; python3 -c \"open('.git/rebase-merge/git-rebase-todo', 'a')"
    ".write('exec sh hook.sh\\n')\""
)


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})  # fmt: skip
    return proc.stdout + proc.stderr


def workspace(tmp_path: Path) -> tuple[Path, Path]:
    """A repository on `topic`, whose one commit conflicts with `main`; `hook.sh` leaves a
    marker in the home folder, outside the workspace, when it runs."""
    home = tmp_path / "home"
    root = home / "proj"
    root.mkdir(parents=True)
    marker = home / "pwned"
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "dev")
    (root / "hook.sh").write_text(f"echo ran > {marker}\n")
    (root / "f.txt").write_text("base\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-qb", "topic")
    (root / "f.txt").write_text("topic\n")
    git(root, "commit", "-qam", "topic")
    git(root, "checkout", "-q", "main")
    (root / "f.txt").write_text("main\n")
    git(root, "commit", "-qam", "main")
    git(root, "checkout", "-q", "topic")
    return root, marker


@pytest.mark.parametrize("command", ["git rebase --exec 'sh hook.sh' main", APPEND])
def test_the_users_rebase_continue_runs_no_exec_line_a_command_left(
    tmp_path: Path, kiln_home: Path, command: str
) -> None:
    root, marker = workspace(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(
        [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "done"]
    ))  # fmt: skip
    proc = kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode="ci",
                    output="stream-json")  # fmt: skip
    results = " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))
    todo = root / ".git" / "rebase-merge" / "git-rebase-todo"
    assert todo.is_file(), results  # the rebase stopped on the conflict, as the attack wants
    assert "exec lines of .git/rebase-merge/git-rebase-todo" in results, results
    # The user finishes the rebase from their own shell, on the host.
    (root / "f.txt").write_text("resolved\n")
    git(root, "add", "f.txt")
    out = git(root, "rebase", "--continue", env={"GIT_EDITOR": "true"})
    assert not marker.exists(), out
    assert not (root / ".git" / "rebase-merge").exists(), out  # the rebase went through


def test_the_users_own_rebase_keeps_its_exec_lines(tmp_path: Path, kiln_home: Path) -> None:
    root, _marker = workspace(tmp_path)
    git(root, "rebase", "--exec", "sh hook.sh", "main")  # the user's, stopped on the conflict
    todo = root / ".git" / "rebase-merge" / "git-rebase-todo"
    assert todo.read_text() == "exec sh hook.sh\n"
    script = tmp_path / "script.json"
    script.write_text(json.dumps(
        [{"tool_calls": [{"name": "run_command", "input": {"command": "git status"}}]}, "done"]
    ))  # fmt: skip
    kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode="ci")
    assert todo.read_text() == "exec sh hook.sh\n"
