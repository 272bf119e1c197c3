"""What the user's own git runs after Kiln (docs/security.md section 4, "read-only inside the
workspace"): a sandboxed command must not leave config that makes the user's next plain
``git status`` — or an editor's, which runs it every few seconds — start a program on the host.
``.git/config`` being read-only is not enough: ``.git/commondir`` names another git folder whose
config git then reads, and ``git status`` in a superproject runs git inside each populated
submodule under that submodule's config (``.git/modules/NAME/config``); and a repository whose
config names a hooks folder in the work tree (``core.hooksPath = .githooks``, husky's
``.husky/_``) runs the hooks there at the user's next commit. Through the real `kiln run` in
`yolo`; the observer is the user's git afterwards."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run_json, tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}  # fmt: skip


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True)


def _superproject(tmp: Path, name: str = "sub") -> Path:
    lib = tmp / "lib"
    lib.mkdir()
    (lib / "lib.py").write_text("y = 1\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "lib"]):
        git(lib, *args)
    root = tmp / "repo"
    root.mkdir()
    (root / "app.py").write_text("x = 1\n")
    git(root, "init", "-q")
    added = git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "--name",
                name, str(lib), "sub")  # fmt: skip
    assert added.returncode == 0, added.stderr
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    return root


def test_commands_leave_no_config_the_users_git_runs(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    root = _superproject(tmp_path)
    marker = host_dir / "ran"
    run = f"echo $0 >> {marker}; false"
    plants = [
        f"git -C sub config core.fsmonitor '{run}'",
        f"printf '[core]\\n\\tfsmonitor = {run}\\n' >> .git/modules/sub/config",
        "mkdir -p .git/other && cp -r .git/objects .git/refs .git/HEAD .git/other/ && "
        f"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = {run}\\n' > .git/other/config"
        " && echo other > .git/commondir",
        "mkdir -p .git/modules/sub/other && cp -r .git/modules/sub/objects .git/modules/sub/refs "
        ".git/modules/sub/HEAD .git/modules/sub/other/ && "
        f"printf '[core]\\n\\tfsmonitor = {run}\\n' > .git/modules/sub/other/config"
        " && echo other > .git/modules/sub/commondir",
    ]
    steps = [{"tool_calls": [{"name": "run_command", "input": {"command": c}}]} for c in plants]
    _, out = kiln_run_json(
        root, steps, home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    results = json.dumps(tool_results(Path(out["transcript"])))
    assert "Read-only file system" in results  # the commands ran and met the sandbox
    for where in (root, root / "sub"):  # what the user (or the editor) runs next
        status = git(where, "status")
        assert status.returncode == 0, status.stderr
    assert not marker.exists(), marker.read_text()
    assert not (root / ".git" / "commondir").exists()


def test_a_submodule_whose_name_is_a_deep_path_is_protected_too(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    """A submodule's name may hold slashes, and its git folder is ``.git/modules/NAME``: a
    repository whose ``.gitmodules`` names one ``d/d/…/lib``, 300 folders deep, put its config
    past the folders the sandbox looked into, and a command planted ``core.fsmonitor`` there
    that the user's next ``git status`` in the superproject ran on the host."""
    name = "/".join(["d"] * 300 + ["lib"])
    root = _superproject(tmp_path, name)
    marker = host_dir / "ran"
    module = f".git/modules/{name}"
    evil = f"[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = echo $0 >> {marker}; false\\n"
    plants = [
        f"printf '{evil}' >> {module}/config",
        f"mkdir -p {module}/other && cp -r {module}/objects {module}/refs {module}/HEAD "
        f"{module}/other/ && printf '{evil}' > {module}/other/config && echo other > {module}/commondir",
    ]
    steps = [{"tool_calls": [{"name": "run_command", "input": {"command": c}}]} for c in plants]
    _, out = kiln_run_json(
        root, steps, home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    results = json.dumps(tool_results(Path(out["transcript"])))
    assert "Read-only file system" in results  # the commands ran and met the sandbox
    (root / "sub" / "lib.py").write_text("y = 2\n")
    status = git(root, "status")  # what the user (or the editor) runs next
    assert status.returncode == 0, status.stderr
    assert not marker.exists(), marker.read_text()
    assert not (root / module / "commondir").exists()


@pytest.mark.parametrize("existing", [True, False])
def test_commands_cannot_plant_hooks_in_the_configured_hooks_folder(
    tmp_path: Path, kiln_home: Path, host_dir: Path, existing: bool
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "core.hooksPath", ".githooks")
    if existing:
        (root / ".githooks").mkdir()
        (root / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
        (root / ".githooks" / "pre-commit").chmod(0o755)
    marker = host_dir / "hook-ran"
    hook = f"#!/bin/sh\necho ran >> {marker}\n"
    plant = (
        f"mkdir -p .githooks && printf '{hook}' > .githooks/pre-commit && "
        f"printf '{hook}' > .githooks/post-commit && chmod +x .githooks/*"
    )
    step = {"tool_calls": [{"name": "run_command", "input": {"command": plant}}]}
    _, out = kiln_run_json(
        root, [step], home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    results = json.dumps(tool_results(Path(out["transcript"])))
    assert "exit code" in results
    (root / "app.py").write_text("x = 1\n")
    git(root, "add", "app.py")
    committed = git(root, "commit", "-qm", "user commit")  # the user's, hooks enabled
    assert committed.returncode == 0, committed.stderr
    assert not marker.exists(), marker.read_text()


def test_config_files_the_repository_includes_are_protected_like_git_config(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    """`include.path = ../shared.gitconfig` makes a tracked file part of `.git/config`; an
    `includeIf "onbranch:…"` names one that is not active yet (and may not exist). Before, the
    file tools and commands wrote them freely: a `core.fsmonitor` or `core.hooksPath` planted
    there ran at the user's next `git status` / `git commit`, on the host."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "shared.gitconfig").write_text("[core]\n\tautocrlf = false\n")
    git(root, "config", "include.path", "../shared.gitconfig")
    git(root, "config", "includeIf.onbranch:evil.path", "../branch.gitconfig")
    git(root, "add", "shared.gitconfig")
    assert git(root, "commit", "-qm", "init").returncode == 0
    marker = host_dir / "ran"
    evil = f"[core]\\n\\tfsmonitor = echo fsmonitor >> {marker}; false\\n\\thooksPath = hk\\n"
    hook = f"#!/bin/sh\\necho hook >> {marker}\\n"
    plant = (
        f"printf '{evil}' >> shared.gitconfig; printf '{evil}' > branch.gitconfig; "
        f"git checkout -qb evil; mkdir -p hk && printf '{hook}' > hk/pre-commit; chmod +x hk/*"
    )
    steps = [
        {"tool_calls": [{"name": "write_file", "input": {
            "path": "shared.gitconfig", "content": evil.replace("\\n", "\n").replace("\\t", "\t")}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": plant}}]},
    ]  # fmt: skip
    _, out = kiln_run_json(
        root, steps, home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    refused, ran = tool_results(Path(out["transcript"]))
    assert "git or your editor acts on this file by itself" in refused, refused
    assert "exit code" in ran, ran
    assert "fsmonitor" not in (root / "shared.gitconfig").read_text()
    assert not (root / "branch.gitconfig").exists()
    git(root, "status")  # the user's, on the branch the command switched to
    (root / "app.py").write_text("x = 1\n")
    git(root, "add", "app.py")
    assert git(root, "commit", "-qm", "user commit").returncode == 0
    assert not marker.exists(), marker.read_text()
