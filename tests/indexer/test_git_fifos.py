"""A file git opens before it lists a commit, swapped for a FIFO, through the real `kiln index`:
a tracked ``shared.gitconfig`` the repository's config includes (directly, or through an include
whose condition does not even hold), the loose ref ``HEAD`` names (a command in the sandbox may
write into ``.git``), ``packed-refs``. git's ``open()`` of a FIFO waits for a writer, and each
of the index's git calls waited its whole 60 s timeout (docs/security.md, "The code index").
The run now finishes at once, says why in one line, and reads the history once the file is a
regular file again."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import repos

from .conftest import write

pytestmark = pytest.mark.e2e

BOUND = 30.0  # seconds; the wait this replaces was 60 s per git call


def _index(repo: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "lsp_server", "index", "."],
        cwd=repo, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
        env={**os.environ, "KILN_HOME": str(repo.parent / "home")},
    )  # fmt: skip
    return result, time.monotonic() - started


def _commits(repo: Path) -> list[str]:
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    try:
        return [row[0] for row in conn.execute("SELECT message FROM commits ORDER BY id")]
    finally:
        conn.close()


def _repository(repo: Path) -> None:
    repos.git(repo, "init", "-q", "-b", "main")
    repos.git(repo, "config", "user.email", "test@kiln.invalid")
    repos.git(repo, "config", "user.name", "Kiln tests")
    write(repo, "billing.py", "def total():\n    return 1\n")
    write(repo, "shared.gitconfig", "[core]\n\tautocrlf = false\n")
    repos.git(repo, "add", "-A")
    repos.git(repo, "commit", "-q", "-m", "Add billing totals")


CASES = {
    # what the repository's config says, and the file then swapped for a FIFO
    "include": ({"include.path": "../shared.gitconfig"}, "shared.gitconfig"),
    "include of an include": (
        {"includeIf.onbranch:nowhere.path": "../more.gitconfig"}, "shared.gitconfig",
    ),
    "HEAD's ref": ({}, ".git/refs/heads/main"),
    "packed-refs": ({}, ".git/packed-refs"),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_a_fifo_git_would_open_is_not_waited_on(repo: Path, case: str) -> None:
    config, fifo = CASES[case]
    _repository(repo)
    for key, value in config.items():
        repos.git(repo, "config", key, value)
    write(repo, "more.gitconfig", "[include]\n\tpath = shared.gitconfig\n")
    saved = (repo / fifo).read_bytes() if (repo / fifo).exists() else None
    (repo / fifo).unlink(missing_ok=True)
    os.mkfifo(repo / fifo)

    result, seconds = _index(repo)
    assert result.returncode == 0, result.stderr
    assert seconds < BOUND, (seconds, result.stderr)
    shown = os.path.normpath(fifo)
    lines = [line for line in result.stderr.splitlines() if "git history is not read" in line]
    assert len(lines) == 1 and lines[0].startswith(f"kiln: skipped {shown}: "), result.stderr
    assert "a FIFO" in lines[0]
    assert _commits(repo) == []

    (repo / fifo).unlink()  # a regular file again: the history is read
    if saved is not None:
        (repo / fifo).write_bytes(saved)
    result, _ = _index(repo)
    assert result.returncode == 0, result.stderr
    assert "git history is not read" not in result.stderr
    assert _commits(repo) == ["Add billing totals"]
