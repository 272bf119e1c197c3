"""The CI patch from a real git repository: against HEAD, in a repository with no commit yet, in
a workspace that is a sub-folder of the repository, and past the size limits (all through the one
``git diff --cached`` of ``Layout.patch``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent.errors import UsageError
from lsp_server.headless.ci import diffstat
from lsp_server.headless.repo_git import Layout, Limits, PatchTooLarge


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def committed(root: Path, files: dict[str, str]) -> None:
    git(root, "init", "-q")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")


def test_patch_in_a_repository_without_a_commit(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "new.py").write_text("X = 1\n")
    (tmp_path / ".kiln").mkdir()
    (tmp_path / ".kiln" / "state.json").write_text("{}")
    layout = Layout.record(tmp_path)
    patch = layout.patch(sorted(layout.dirty_paths()), Limits())
    assert "new file mode" in patch and "+X = 1" in patch
    assert [f["path"] for f in diffstat(patch)] == ["new.py"]  # .kiln/ is never in the patch


def test_patch_against_head_holds_only_the_named_paths(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a git checkout"):
        Layout.record(tmp_path)
    committed(tmp_path, {"a.py": "old\n", "b.py": "old\n"})
    (tmp_path / "a.py").write_text("new\n")
    (tmp_path / "b.py").write_text("new\n")
    layout = Layout.record(tmp_path)
    patch = layout.patch(["a.py"], Limits())
    assert "-old\n+new" in patch and [f["path"] for f in diffstat(patch)] == ["a.py"]
    assert layout.patch([], Limits()) == ""


def test_a_workspace_in_a_sub_folder_gets_its_own_paths(tmp_path: Path) -> None:
    committed(tmp_path, {"sub/a.txt": "a\n", "b.txt": "b\n"})
    (tmp_path / "sub" / "a.txt").write_text("a2\n")
    (tmp_path / "b.txt").write_text("b2\n")  # outside the workspace: never in its patch
    layout = Layout.record(tmp_path / "sub")
    assert layout.dirty_paths() == {"a.txt"}
    patch = layout.patch(["a.txt"], Limits())
    assert [f["path"] for f in diffstat(patch)] == ["a.txt"]
    check = subprocess.run(["git", "apply", "-R", "--check", "-"], input=patch.encode(),
                           cwd=tmp_path / "sub", capture_output=True)  # fmt: skip
    assert check.returncode == 0, check.stderr


def test_the_patch_stops_at_its_limits(tmp_path: Path) -> None:
    committed(tmp_path, {"a.txt": "a\n"})
    for i in range(30):
        (tmp_path / f"n{i}.txt").write_text("line\n" * 2000)
    layout = Layout.record(tmp_path)
    paths = sorted(layout.dirty_paths())
    with pytest.raises(PatchTooLarge, match="changed 30 files; a patch holds at most 10"):
        layout.patch(paths, Limits(max_files=10))
    with pytest.raises(PatchTooLarge, match="too large for a patch"):
        layout.patch(paths, Limits(max_bytes=100_000))  # files are 300 KB on disk
    # a diff larger than the files (a one-byte-per-line file): stopped while it streams
    (tmp_path / "a.txt").write_text("x\n" * 60_000)
    with pytest.raises(PatchTooLarge, match="too large for a patch"):
        layout.patch(["a.txt"], Limits(max_bytes=150_000))
    assert layout.patch(["a.txt"], Limits(max_bytes=400_000)).count("\n+x") == 60_000


def test_commits_made_after_the_start_are_in_the_changes(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    layout = Layout.record(tmp_path)  # no commit yet
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.py").write_text("X = 1\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "agent")
    assert layout.dirty_paths() == {"sub/x.py"}
    assert "+X = 1" in layout.patch(["sub/x.py"], Limits())


def test_a_patch_of_a_file_that_is_not_utf8_applies(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 ol\xe9\n".encode("latin-1"))
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 ol\xe9!\n".encode("latin-1"))
    layout = Layout.record(tmp_path)
    from lsp_server.headless.artifacts import Artifacts

    written = Artifacts(tmp_path / "out", tmp_path).write(
        "changes.patch", layout.patch(["latin1.txt"], Limits())
    )
    check = subprocess.run(["git", "apply", "-R", "--check", str(written)], cwd=tmp_path,
                           capture_output=True)  # fmt: skip
    assert check.returncode == 0, check.stderr
