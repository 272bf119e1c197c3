"""A folder unpacked from an archive that ships a `.git` file (`gitdir: …`), a `.git` link or a
`.git` folder whose `commondir` names a repository elsewhere, through the real `kiln index` and
`kiln search` (docs/security.md section 6d). The index's `git log` followed it to the user's
private repository and put its commit messages and paths into the index, which `kiln search`
and the model's `search_code` read. A git folder outside the tree is now followed only where
git put it: a linked worktree's and a submodule's, which keep their history."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repos import committing_repo, git

pytestmark = pytest.mark.e2e

PRIVATE = "PRIVATE-canary-3f7c: rotate the payroll database password"


@pytest.fixture
def private(tmp_path: Path) -> Path:
    """The user's own private repository, with a commit whose message must stay there."""
    repo = tmp_path / "private"
    commit = committing_repo(repo)
    commit(PRIVATE, {"payroll/db.py": "def connect():\n    return None\n"})
    return repo


def kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "KILN_HOME": str(cwd.parent / "kh")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc


def history(root: Path) -> list[tuple[str, str]]:
    """`kiln index` in ``root``: the commit messages it recorded, with their files."""
    kiln("index", ".", cwd=root)
    conn = sqlite3.connect(root / ".kiln" / "index.db")
    try:
        return conn.execute(
            "SELECT message, COALESCE(group_concat(path), '') FROM commits"
            " LEFT JOIN commit_files ON commit_id = id GROUP BY id ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


def unpacked(tmp_path: Path) -> Path:
    root = tmp_path / "downloads" / "example"
    root.mkdir(parents=True)
    (root / "payroll").mkdir()
    (root / "payroll" / "db.py").write_text("def connect():\n    return 1\n")
    return root


def test_a_shipped_git_file_naming_another_repository_reads_no_history(
    tmp_path: Path, private: Path
) -> None:
    root = unpacked(tmp_path)
    (root / ".git").write_text(f"gitdir: {private / '.git'}\n")
    assert history(root) == []
    assert "PRIVATE-canary" not in kiln("search", "rotate payroll password", cwd=root).stdout


def test_history_recorded_before_is_dropped(tmp_path: Path, private: Path) -> None:
    root = unpacked(tmp_path)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "Own commit")
    assert history(root) == [("Own commit", "payroll/db.py")]
    shutil.rmtree(root / ".git")
    (root / ".git").write_text(f"gitdir: {private / '.git'}\n")
    assert history(root) == []


def test_a_relative_git_file_naming_a_worktree_of_another_reads_no_history(
    tmp_path: Path, private: Path
) -> None:
    """A real worktree's git folder, named by a `.git` file that is not that worktree's."""
    git(private, "worktree", "add", "-q", str(tmp_path / "theirs-wt"))
    root = unpacked(tmp_path)
    pointer = os.path.relpath(private / ".git" / "worktrees" / "theirs-wt", root)
    (root / ".git").write_text(f"gitdir: {pointer}\n")
    assert history(root) == []


def test_a_shipped_git_link_reads_no_history(tmp_path: Path, private: Path) -> None:
    root = unpacked(tmp_path)
    (root / ".git").symlink_to(private / ".git")
    assert history(root) == []


def test_a_shipped_git_folder_whose_commondir_leads_out_reads_no_history(
    tmp_path: Path, private: Path
) -> None:
    """Its own `HEAD`, the refs and objects of the repository its `commondir` names."""
    root = unpacked(tmp_path)
    dotgit = root / ".git"
    for name in ("refs", "objects"):
        (dotgit / name).mkdir(parents=True)
    (dotgit / "HEAD").write_text("ref: refs/heads/main\n")
    (dotgit / "commondir").write_text(f"{private / '.git'}\n")
    assert git(root, "log", "--format=%s").strip() == PRIVATE  # git does follow it
    assert history(root) == []


def test_a_linked_worktree_keeps_its_history(tmp_path: Path, private: Path) -> None:
    worktree = tmp_path / "private-wt"
    git(private, "worktree", "add", "-q", str(worktree))
    assert history(worktree) == [(PRIVATE, "payroll/db.py")]


def test_a_submodule_keeps_its_history(tmp_path: Path, private: Path) -> None:
    commit = committing_repo(tmp_path / "super")
    commit("Start the superproject", {"README.md": "super\n"})
    allow = ("-c", "protocol.file.allow=always")
    git(tmp_path / "super", *allow, "submodule", "add", "-q", str(private), "vendor/private")
    sub = tmp_path / "super" / "vendor" / "private"
    assert (sub / ".git").is_file()  # absorbed: its git folder is the superproject's
    assert history(sub) == [(PRIVATE, "payroll/db.py")]


NOT_READ = "the git history is not read"


def said_not_read(root: Path) -> list[str]:
    """The lines a `kiln index` in ``root`` said about its git history not being read."""
    stderr = kiln("index", ".", cwd=root).stderr
    return [line for line in stderr.splitlines() if NOT_READ in line]


def test_a_separate_git_dir_outside_the_tree_says_once_why_it_has_no_history(
    tmp_path: Path,
) -> None:
    """The user's own `git init --separate-git-dir`: nothing in that git folder names the work
    tree back, so it is refused like a shipped `.git` file naming the user's repository (which
    it cannot be told from), and `kiln index` says why in one line, once. Before, the history
    was missing without a word."""
    root, elsewhere = tmp_path / "work", tmp_path / "gitdirs" / "work.git"
    elsewhere.parent.mkdir()
    git(tmp_path, "init", "-q", f"--separate-git-dir={elsewhere}", str(root))
    (root / "app.py").write_text("def main():\n    return 1\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "Own separate commit")
    assert git(root, "log", "--format=%s").strip() == "Own separate commit"  # git reads it
    lines = said_not_read(root)
    assert len(lines) == 1 and lines[0].startswith("kiln: skipped .git: "), lines
    assert str(elsewhere) in lines[0]
    assert history(root) == []  # the second run: counted with the files said before
    assert said_not_read(root) == []


def test_a_shipped_git_file_says_why_it_has_no_history(tmp_path: Path, private: Path) -> None:
    root = unpacked(tmp_path)
    (root / ".git").write_text(f"gitdir: {private / '.git'}\n")
    lines = said_not_read(root)
    assert len(lines) == 1 and str(private / ".git") in lines[0], lines


def test_a_linked_worktree_says_nothing_about_its_history(tmp_path: Path, private: Path) -> None:
    worktree = tmp_path / "private-wt"
    git(private, "worktree", "add", "-q", str(worktree))
    assert said_not_read(worktree) == []
