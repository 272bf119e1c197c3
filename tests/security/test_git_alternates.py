"""A repository whose git folder borrows objects from elsewhere (`objects/info/alternates`, or
`GIT_ALTERNATE_OBJECT_DIRECTORIES`), through the real `kiln index` and `kiln search`
(docs/security.md section 6d). A `.git` shipped with an alternates file naming the objects of
the user's private repository, and a `HEAD` naming one of its commits, put that repository's
commit messages and paths into the index; one naming a folder whose own alternates file is a
FIFO held each of the index's git calls for its whole 60 s timeout. An object store out of the
repository now leaves the history unread, said in one line; one inside keeps it."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.repos import committing_repo, git

pytestmark = pytest.mark.e2e

PRIVATE = "PRIVATE-canary-8b21: move the signing keys to the new vault"
OWN = "Add the billing totals"
BOUND = 30.0  # seconds; git waited 60 s per call on the FIFO
NOT_READ = "the git history is not read"


def kiln(root: Path, *args: str, env: dict[str, str] | None = None) -> tuple[str, str, float]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=root, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "KILN_HOME": str(root.parent / "kh"),
             **(env or {})},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout, proc.stderr, time.monotonic() - started


def commits(root: Path) -> list[str]:
    conn = sqlite3.connect(root / ".kiln" / "index.db")
    try:
        return [m for (m,) in conn.execute("SELECT message FROM commits ORDER BY id")]
    finally:
        conn.close()


def said(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if NOT_READ in line]


@pytest.fixture
def private(tmp_path: Path) -> str:
    """The user's private repository, out of the workspace; returns its commit's hash."""
    commit = committing_repo(tmp_path / "private")
    commit(PRIVATE, {"keys/vault.py": "def rotate():\n    return None\n"})
    return git(tmp_path / "private", "rev-parse", "HEAD").strip()


def own(tmp_path: Path) -> Path:
    """The workspace: a repository with a commit of its own."""
    root = tmp_path / "work"
    committing_repo(root)(OWN, {"billing.py": "def total():\n    return 1\n"})
    return root


def alternates(root: Path, *stores: str) -> None:
    (root / ".git" / "objects" / "info" / "alternates").write_text(
        "".join(f"{s}\n" for s in stores)
    )


def test_a_shipped_alternates_file_does_not_bring_another_repositorys_history(
    tmp_path: Path, private: str
) -> None:
    root = own(tmp_path)
    alternates(root, str(tmp_path / "private" / ".git" / "objects"))
    (root / ".git" / "HEAD").write_text(private + "\n")
    assert PRIVATE in git(root, "log", "--format=%s")  # git does read through it
    _, stderr, _ = kiln(root, "index", ".")
    lines = said(stderr)
    assert len(lines) == 1, stderr
    assert lines[0].startswith("kiln: skipped .git/objects/info/alternates: borrows objects from ")
    assert commits(root) == []
    stdout, _, _ = kiln(root, "search", "move signing keys vault")
    assert "PRIVATE-canary" not in stdout


@pytest.mark.parametrize("link", ["objects", "objects/pack"])
def test_a_shipped_link_into_another_repositorys_objects_does_not_bring_its_history(
    tmp_path: Path, private: str, link: str
) -> None:
    """The same store reached through a link in the shipped `.git` instead of a listing."""
    git(tmp_path / "private", "gc", "-q")  # its objects in a pack
    root = own(tmp_path)
    shutil.rmtree(root / ".git" / link)
    (root / ".git" / link).symlink_to(tmp_path / "private" / ".git" / link)
    (root / ".git" / "HEAD").write_text(private + "\n")
    assert PRIVATE in git(root, "log", "--format=%s")  # git does read through it
    _, stderr, _ = kiln(root, "index", ".")
    lines = said(stderr)
    assert len(lines) == 1 and lines[0].startswith(f"kiln: skipped .git/{link}: "), stderr
    assert commits(root) == []


def test_alternates_in_the_environment_do_not_bring_another_repositorys_history(
    tmp_path: Path, private: str
) -> None:
    """`GIT_ALTERNATE_OBJECT_DIRECTORIES` where `kiln index` is started: its git calls never
    pass it on (nor any other `GIT_` variable)."""
    root = own(tmp_path)
    (root / ".git" / "HEAD").write_text(private + "\n")
    env = {"GIT_ALTERNATE_OBJECT_DIRECTORIES": str(tmp_path / "private" / ".git" / "objects")}
    seen = subprocess.run(
        ["git", "log", "--format=%s"], cwd=root, capture_output=True, text=True,
        env={**os.environ, **env},
    )  # fmt: skip
    assert PRIVATE in seen.stdout  # git does read through it
    kiln(root, "index", ".", env=env)
    assert commits(root) == []


@pytest.mark.parametrize("layout", ["a FIFO", "a store whose alternates file is a FIFO"])
def test_alternates_naming_a_fifo_out_of_the_tree_are_not_waited_on(
    tmp_path: Path, layout: str
) -> None:
    root = own(tmp_path)
    outside = tmp_path / "outside"
    if layout == "a FIFO":
        outside.parent.mkdir(exist_ok=True)
        os.mkfifo(outside)
    else:
        (outside / "info").mkdir(parents=True)
        os.mkfifo(outside / "info" / "alternates")
    alternates(root, str(outside))
    _, stderr, seconds = kiln(root, "index", ".")
    assert seconds < BOUND, (seconds, stderr)
    assert len(said(stderr)) == 1, stderr
    assert str(outside) in said(stderr)[0]

    (root / ".git" / "objects" / "info" / "alternates").unlink()  # gone: the history is read
    _, stderr, _ = kiln(root, "index", ".")
    assert said(stderr) == []
    assert commits(root) == [OWN]


def test_alternates_inside_the_repository_keep_its_history(tmp_path: Path) -> None:
    """A store in the tree (a bare mirror kept there), named relative to the objects folder."""
    root = own(tmp_path)
    git(tmp_path, "clone", "-q", "--bare", str(root), str(root / "mirror.git"))
    alternates(root, "../../mirror.git/objects")
    _, stderr, _ = kiln(root, "index", ".")
    assert said(stderr) == []
    assert commits(root) == [OWN]
