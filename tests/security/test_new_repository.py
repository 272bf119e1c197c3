"""A workspace that is not a git repository when the session starts: a command that makes one
(`git init && git config core.fsmonitor …`) wrote a git config that nothing protected, and the
user's next `git status` in that folder — which a shell prompt or the editor's git view runs on
its own — ran the command it names, on the host (docs/security.md section 4). Through the real
`kiln run --mode ci`, then the user's plain `git status`: the new `.git` is removed when the
command ends, and nothing runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


def test_a_repository_made_at_the_root_does_not_outlive_the_command(
    tmp_path: Path, kiln_home: Path
) -> None:
    root = tmp_path / "home" / "proj"
    root.mkdir(parents=True)
    (root / "main.py").write_text("print('hi')\n")
    mark = tmp_path / "fsmonitor-ran"
    # in a script: the check refuses `git config k v` itself in ci (a write of `.git/config`)
    (root / "plant.sh").write_text(
        f"git init -q && git config core.fsmonitor 'touch {mark}; false' && echo made\n"
    )
    command = "sh plant.sh"
    script = tmp_path / "script.json"
    script.write_text(json.dumps(
        [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "done"]
    ))  # fmt: skip
    proc = kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode="ci",
                    output="stream-json")  # fmt: skip
    results = " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))
    subprocess.run(["git", "status"], cwd=root, capture_output=True)  # the user's shell prompt
    assert not mark.exists(), results
    assert "made" in results and "removed .git" in results, results
    assert not (root / ".git").exists()
    assert (root / "main.py").read_text() == "print('hi')\n"


def test_a_hooks_folder_the_repository_lacked_does_not_outlive_the_command(
    tmp_path: Path, kiln_home: Path
) -> None:
    """`git init --template=` (or a clone where git's templates are missing) makes no
    `.git/hooks`: the read-only binds had nothing to cover, and a hook a command put there ran
    at the user's next commit."""
    root = tmp_path / "home" / "proj"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--template=", str(root)], check=True)
    mark = tmp_path / "hook-ran"
    (root / "hook.sh").write_text(f"#!/bin/sh\ntouch {mark}\n")
    # a program's write, which the permission check cannot read (`mkdir`, `cp` and `chmod` it
    # refuses in ci)
    command = ("python3 -c \"import os, shutil; os.mkdir('.git/hooks'); shutil.copy('hook.sh', "
               "'.git/hooks/pre-commit'); os.chmod('.git/hooks/pre-commit', 0o755)\"")  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps(
        [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "done"]
    ))  # fmt: skip
    proc = kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode="ci",
                    output="stream-json")  # fmt: skip
    results = " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))
    subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm",
                    "x", "--allow-empty"], cwd=root, capture_output=True)  # fmt: skip
    assert not mark.exists(), results
    assert "removed .git/hooks" in results, results
