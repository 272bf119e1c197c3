"""A nested repository that is not a gitlink of the index — one a command makes
(`git init tools`), or the user's own untracked clone (`vendor/lib`) — runs what its config
names whenever git looks at it: the user's shell prompt on `cd tools`, or the editor's git view,
which opens repositories one folder down on its own. Its `.git/config` was an ordinary workspace
file to commands, so `git -C vendor/lib config core.fsmonitor CMD` or a new repository with
one ran CMD on the host at the user's next `git status` there (docs/security.md section 4).
Through the real `kiln run --mode ci`; the observer is the user's plain `git status` in the
nested folder afterwards, its marker outside /tmp."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.repos import git
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "home" / "proj"
    (root / "vendor" / "lib").mkdir(parents=True)
    git(root, "init", "-q")
    (root / "a.txt").write_text("a\n")
    lib = root / "vendor" / "lib"
    git(lib, "init", "-q")  # the user's own clone, untracked
    (lib / "l.txt").write_text("l\n")
    git(lib, "add", "-A")
    git(lib, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm", "l")
    return root


def run(root: Path, tmp_path: Path, kiln_home: Path, lines: list[str]) -> str:
    steps = [{"tool_calls": [{"name": "run_command", "input": {"command": c}}]} for c in lines]
    script = tmp_path / "script.json"
    script.write_text(json.dumps([*steps, "done"]))
    proc = kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode="ci",
                    output="stream-json")  # fmt: skip
    return " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))


def users_git_status(folder: Path, home: Path) -> None:
    env = {**os.environ, "HOME": str(home)}
    subprocess.run(["git", "status"], cwd=folder, env=env, capture_output=True)


def test_a_new_nested_repository_does_not_outlive_its_command(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    root = workspace(tmp_path)
    marker = host_dir / "fsmonitor-ran"
    results = run(root, tmp_path, kiln_home, [
        # a program writes the config: the shell check refuses `git config` in ci on its own
        "git init -q tools && python3 -c \"open('tools/.git/config', 'a')"
        f".write('[core]\\\\n\\\\tfsmonitor = touch {marker}; echo\\\\n')\" && "
        "echo x > tools/t.txt",
    ])  # fmt: skip
    assert "removed tools/.git" in results, results
    users_git_status(root / "tools", tmp_path)
    assert not marker.exists(), "a nested repository's config ran at the user's git status"
    assert (root / "tools" / "t.txt").read_text() == "x\n", results  # the files stay


@pytest.mark.parametrize("command", [
    "git -C vendor/lib config core.fsmonitor 'touch {marker}; echo'",
    "python3 -c \"open('vendor/lib/.git/config', 'a')"
    ".write('[core]\\\\n\\\\tfsmonitor = touch {marker}; echo\\\\n')\"",
    "python3 -c \"import shutil; shutil.move('vendor/lib/.git', 'old');"
    " shutil.copytree('old', 'vendor/lib/.git')\" && git -C vendor/lib config core.fsmonitor"
    " 'touch {marker}; echo'",
    # a commondir the user's repository did not have names another git folder's config
    "cp -r vendor/lib/.git evil && git --git-dir=evil config core.fsmonitor 'touch {marker}; echo'"
    " && python3 -c \"open('vendor/lib/.git/commondir', 'w').write('../../../evil')\"",
])  # fmt: skip
def test_the_users_nested_repository_keeps_its_config(
    tmp_path: Path, kiln_home: Path, host_dir: Path, command: str
) -> None:
    root = workspace(tmp_path)
    marker = host_dir / "fsmonitor-ran"
    results = run(root, tmp_path, kiln_home, [command.format(marker=marker)])
    users_git_status(root / "vendor" / "lib", tmp_path)
    assert not marker.exists(), results
    assert "fsmonitor" not in (root / "vendor" / "lib" / ".git" / "config").read_text(), results
