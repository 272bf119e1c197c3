"""Config files a nested repository's git config includes from the work tree (docs/security.md
sections 2 and 4). A populated gitlink's config (``sub/.git/config``, or a submodule's
``.git/modules/sub/config``) with ``include.path = ../shared.gitconfig`` makes that tracked file
part of the config git reads when the user's ``git status`` recurses into ``sub``. Before, the
file tools and commands wrote it freely: a ``core.fsmonitor`` planted there ran at the user's next
``git status``, on the host. Through the real `kiln run` in `yolo`; the observer is the user's git
afterwards."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run_json, tool_results
from tests.security.test_git_autorun import git

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


def _repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir()
    for name, text in files.items():
        (path / name).write_text(text)
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        assert git(path, *args).returncode == 0
    return path


def _workspace(tmp: Path, submodule: bool) -> tuple[Path, Path]:
    """A workspace whose gitlink ``sub`` includes ``sub/shared.gitconfig``; returns the workspace
    and the nested repository's config file."""
    files = {"lib.py": "y = 1\n", "shared.gitconfig": "[core]\n\tautocrlf = false\n"}
    root = _repo(tmp / "repo", {"app.py": "x = 1\n"})
    if submodule:  # sub/.git is a file naming .git/modules/sub
        lib = _repo(tmp / "lib", files)
        add = ["-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "sub"]
        assert git(root, *add).returncode == 0
        config, up = root / ".git" / "modules" / "sub" / "config", "../../../sub/"
    else:  # a repository of its own inside the work tree, recorded as a gitlink
        _repo(root / "sub", files)
        assert git(root, "add", "sub").returncode == 0
        config, up = root / "sub" / ".git" / "config", "../"
    assert git(root, "commit", "-qm", "sub").returncode == 0
    subprocess.run(
        ["git", "config", "-f", config, "include.path", up + "shared.gitconfig"], check=True
    )
    branch = [
        "git",
        "config",
        "-f",
        config,
        "includeIf.onbranch:evil.path",
        up + "branch.gitconfig",
    ]
    subprocess.run(branch, check=True)
    return root, config


@pytest.mark.parametrize("submodule", [False, True], ids=["nested-git-folder", "submodule"])
def test_config_files_a_nested_repository_includes_are_protected(
    tmp_path: Path, kiln_home: Path, host_dir: Path, submodule: bool
) -> None:
    root, config = _workspace(tmp_path, submodule)
    marker = host_dir / "ran"
    evil = f"[core]\\n\\tfsmonitor = echo fsmonitor >> {marker}; false\\n"
    plant = (
        f"printf '{evil}' >> sub/shared.gitconfig; printf '{evil}' > sub/branch.gitconfig; "
        "git -C sub checkout -qb evil"
    )
    steps = [
        {"tool_calls": [{"name": "write_file", "input": {
            "path": "sub/shared.gitconfig", "content": evil.replace("\\n", "\n").replace("\\t", "\t")}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": plant}}]},
    ]  # fmt: skip
    _, out = kiln_run_json(
        root, steps, home=tmp_path, kiln_home=kiln_home, script=tmp_path / "script.json"
    )
    refused, ran = tool_results(Path(out["transcript"]))
    assert "git or your editor acts on this file by itself" in refused, refused
    assert "exit code" in ran, ran
    assert "fsmonitor" not in (root / "sub" / "shared.gitconfig").read_text()
    assert not (root / "sub" / "branch.gitconfig").exists()
    assert "shared.gitconfig" in config.read_text()  # the include is still there
    for where in (root, root / "sub"):  # the user's (or the editor's) next git status
        assert git(where, "status").returncode == 0
    assert not marker.exists(), marker.read_text()
