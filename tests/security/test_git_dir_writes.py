"""The file tools never write what git or an editor runs on the host later (docs/security.md
section 2), in any mode, `yolo` included: `.git/config`, a hook, a nested repository's config or
`.git` pointer, a separate git folder, the configured hooks folder, `.vscode/tasks.json`. Before,
a `write_file` of `.git/config` in yolo set a `core.fsmonitor` the user's next `git status` ran.
Through the real `kiln run`; the observer is the user's plain git afterwards, and the model sees
the refusal as a tool error."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.repos import git
from tests.security.scripted_run import kiln_run


def step(tool: str, **args: object) -> dict[str, object]:
    return {"tool_calls": [{"name": tool, "input": args}]}


def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    (root / ".githooks").mkdir()
    (root / "docs").mkdir()
    (root / "docs" / "hooks").symlink_to("../.git/hooks")  # a link into the git folder
    git(root, "config", "core.hooksPath", ".githooks")
    git(root, "add", "a.txt")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return root


@pytest.mark.parametrize("mode", ["yolo", "auto-edit", "ci"])
def test_file_tools_refuse_git_and_autorun_files_in_every_mode(
    tmp_path: Path, kiln_home: Path, host_dir: Path, mode: str
) -> None:
    root = repository(tmp_path)
    marker = host_dir / "git-dir-write-ran"
    hook = f"#!/bin/sh\ntouch {marker}\n"
    config = (root / ".git" / "config").read_text()
    monitor = config + f"[core]\n\tfsmonitor = touch {marker}; echo\n"
    writes = {
        ".git/config": monitor,
        ".git/hooks/pre-commit": hook,
        ".githooks/pre-commit": hook,  # the hooks folder core.hooksPath names
        "docs/hooks/post-commit": hook,  # through a link into .git
        ".GIT/config": monitor,  # another spelling (a case-insensitive disk)
        "sub/.git": "gitdir: ../evil\n",  # a nested repository's pointer
        "vendor/x/.git/config": monitor,  # a nested repository's config
        ".vscode/tasks.json": '{"tasks": [{"command": "touch ' + str(marker) + '"}]}',
    }
    steps = [step("write_file", path=p, content=c) for p, c in writes.items()]
    steps.append(step("edit_file", path=".git/config", old_text="[core]", new_text=monitor))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([*steps, "done"]))
    extra = ("--ci",) if mode == "ci" else ()
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script,
                    mode="ci" if mode == "ci" else mode, extra=extra)  # fmt: skip
    result = json.loads(proc.stdout)
    transcript = Path(result["transcript"]).read_text()
    assert (root / ".git" / "config").read_text() == config
    for rel in writes:
        if rel != ".git/config":
            assert not (root / rel).exists(), f"{rel} was written in {mode}"
    assert transcript.count("Kiln's file tools never write it") >= len(writes), transcript[-3000:]
    # the user's own git afterwards runs nothing the agent wrote
    env = {**os.environ, "HOME": str(tmp_path)}
    subprocess.run(["git", "status"], cwd=root, env=env, check=True, capture_output=True)
    subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "u",
                    "--allow-empty"], cwd=root, env=env, check=True, capture_output=True)  # fmt: skip
    assert not marker.exists()


def test_memory_files_stay_editable_in_yolo(tmp_path: Path, kiln_home: Path) -> None:
    """The rule is narrow: yolo still edits memory and settings without asking."""
    root = repository(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([step("write_file", path="KILN.md", content="notes\n"), "done"]))
    kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, mode="yolo")
    assert (root / "KILN.md").read_text() == "notes\n"
