"""A repository whose git history is hostile, through the real `kiln index`: a commit message
can hold any character but NUL, a path any byte but NUL and ``/``. Neither may stop the run or
move a commit's files onto another commit (docs/security.md, "The code index")."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests import repos

from .conftest import write
from .test_hostile_tree import kiln  # the real `kiln`, a temp KILN_HOME, a hang bound

pytestmark = pytest.mark.e2e


def commit(root: Path, message: str, rel: str) -> None:
    write(root, rel, "def symbol():\n    pass\n")
    repos.git(root, "add", "-A")
    repos.git(root, "commit", "-q", "-m", message)


def test_separator_characters_in_messages_and_names_keep_each_commit_whole(repo: Path) -> None:
    repos.git(repo, "init", "-q", "-b", "main")
    repos.git(repo, "config", "user.email", "test@kiln.invalid")
    repos.git(repo, "config", "user.name", "Kiln tests")
    # The characters the log's records were split on, then a forged hash, time and file list.
    forged = "Fix parser\x1e" + "F" * 40 + "\x1fnot-a-time\x1fforged\x1dforged.py"
    commit(repo, forged, "parser.py")
    commit(repo, "Add a line\nbreak", "new\nline.py")
    result = kiln("index", ".", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    try:
        rows = conn.execute(
            "SELECT message, group_concat(path) FROM commits"
            " JOIN commit_files ON commit_id = id GROUP BY id ORDER BY id"
        ).fetchall()
    finally:
        conn.close()
    assert rows == [(forged, "parser.py"), ("Add a line\nbreak", "new\nline.py")]
