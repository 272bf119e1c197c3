"""Kiln's own git calls after a run (docs/security.md section 8) must not enter a repository the
agent made inside the workspace. A nested repository is the agent's to configure — its
`sub/.git/config` is an ordinary workspace file — so once it is in the index as a gitlink, a
`git status` that looks inside it would run the filter driver the agent wrote there, on the host,
outside the sandbox. Through the real `kiln run --ci --commit-branch` and `kiln run --mode yolo`
with bubblewrap; the marker is looked for outside /tmp (the sandbox's /tmp is private)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.repos import git

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


def attack(marker: Path) -> list[object]:
    """The agent's commands: all inside the workspace, all 'understood', none risky."""
    clean = f"touch {marker} 2>/dev/null; cat"
    lines = [
        "git init -q sub",
        # a program writes the config: the shell check refuses `git config` in ci on its own
        "python3 -c \"open('sub/.git/config', 'a').write("
        f'\'[filter \\"ev\\"]\\n\\tclean = {clean}\\n[core]\\n\\tfsmonitor = touch {marker}\\n\')"',
        "printf '[submodule \"sub\"]\\n\\tpath = sub\\n\\turl = ./sub\\n\\tignore = none\\n' > .gitmodules",
        "printf '* filter=ev\\n' > sub/.gitattributes",
        "echo data > sub/f.txt",
        "git -C sub add .",
        "git -C sub -c user.name=a -c user.email=a@b commit -qm sub",
        "git add sub",
        "touch -m -d 2030-01-01 sub/f.txt",  # stat-dirty: git must re-clean it to compare
    ]
    # One command: a new nested .git does not outlive the command that made it (removed then).
    step = {"tool_calls": [{"name": "run_command", "input": {"command": " && ".join(lines)}}]}
    return [step, "done"]


@pytest.mark.parametrize("mode", ["ci", "yolo"])
def test_kilns_git_calls_do_not_run_a_nested_repositorys_filter(
    tmp_path: Path, kiln_home: Path, host_dir: Path, mode: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    marker = host_dir / "nested-filter-ran"
    script = tmp_path / "script.json"
    script.write_text(json.dumps(attack(marker)))
    mode_args = ["--ci", "--commit-branch", "kiln/nested"] if mode == "ci" else ["--mode", mode]
    env = {**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home),
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", *mode_args, "--output-format", "json", "go"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    result = json.loads(proc.stdout)
    transcript = Path(result["transcript"]).read_text()
    assert "sub taken out of the index" in transcript, transcript[-2000:]  # the attack ran
    assert "removed sub/.git" in transcript, transcript[-2000:]  # ... and its .git went with it
    # ... and the gitlink it recorded was taken out of the index when the command ended
    assert "160000" not in git(root, "ls-files", "-s", "sub"), result
    assert not marker.exists(), "a nested repository's filter ran on the host"
    if mode == "ci":
        assert result["branch"] == "kiln/nested"
        # Kiln's own commit does not record the agent's repository as a gitlink either
        assert "160000" not in git(root, "ls-tree", "-r", "kiln/nested"), result
