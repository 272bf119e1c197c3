"""The CI patch from a real git repository: against HEAD, and in a repository with no commit yet
(both through the one ``git diff --cached`` of ``working_tree_patch``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from lsp_server.headless.ci import diffstat, is_git_repo, working_tree_patch


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_patch_in_a_repository_without_a_commit(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "new.py").write_text("X = 1\n")
    (tmp_path / ".kiln").mkdir()
    (tmp_path / ".kiln" / "state.json").write_text("{}")
    patch = working_tree_patch(tmp_path)
    assert "new file mode" in patch and "+X = 1" in patch
    assert [f["path"] for f in diffstat(patch)] == ["new.py"]  # .kiln/ is never in the patch


def test_patch_against_head_holds_only_the_named_paths(tmp_path: Path) -> None:
    assert not is_git_repo(tmp_path)
    git(tmp_path, "init", "-q")
    assert is_git_repo(tmp_path)
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("old\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
    (tmp_path / "a.py").write_text("new\n")
    (tmp_path / "b.py").write_text("new\n")
    patch = working_tree_patch(tmp_path, ["a.py"])
    assert "-old\n+new" in patch and [f["path"] for f in diffstat(patch)] == ["a.py"]
    assert working_tree_patch(tmp_path, []) == ""
