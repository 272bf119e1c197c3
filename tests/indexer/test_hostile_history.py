"""A repository whose git history is hostile, through the real `kiln index`: a commit message
can hold any character but NUL and be of any size, a path any byte but NUL and ``/``. None may
stop the run, take the machine's memory or move a commit's files onto another commit
(docs/security.md, "The code index")."""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from indexer.history import MAX_MESSAGE_BYTES
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


MEMORY = 512 * 1024 * 1024  # `kiln index` and its `git log` need under 300 MB of address space
TWIN = "def compute_total(items):\n    return sum(item.price for item in items)\n"


def test_a_commit_message_of_64_mb_is_read_bounded_and_the_other_votes_count(
    repo: Path, tmp_path: Path
) -> None:
    """git stores a message of any size; `kiln index` read one of 64 MB whole, decoded, split
    and stored it in copies (a MemoryError under 1 GB of address space, 146 MB more index).
    The child runs under an address-space limit, so a regression fails here instead of taking
    the machine's memory. Only the message's first ``MAX_MESSAGE_BYTES`` are kept."""
    repos.git(repo, "init", "-q", "-b", "main")
    repos.git(repo, "config", "user.email", "test@kiln.invalid")
    repos.git(repo, "config", "user.name", "Kiln tests")
    write(repo, "billing.py", TWIN)
    write(repo, "shipping.py", TWIN)
    repos.git(repo, "add", "-A")
    repos.git(repo, "commit", "-q", "-m", "Add billing and shipping totals")
    write(repo, "shipping.py", TWIN + "#\n")
    repos.git(repo, "commit", "-q", "-am", "Fix rounding of parcel weight surcharges")
    huge = tmp_path / "message.txt"
    line = "Rework the ledger " * 50 + "\n"
    huge.write_text("Rework the ledger\n\n" + line * (64 * 1024 * 1024 // len(line)))
    write(repo, "billing.py", TWIN + "#\n")  # the newest change: recency favours billing.py
    repos.git(repo, "commit", "-q", "-a", "-F", str(huge))

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    result = subprocess.run(
        [sys.executable, "-m", "lsp_server", "index", "."],
        cwd=repo, capture_output=True, text=True, timeout=120, preexec_fn=limited,
        env={**os.environ, "KILN_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "3 new commits of git history" in result.stdout
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    try:
        messages = [row[0] for row in conn.execute("SELECT message FROM commits ORDER BY id")]
    finally:
        conn.close()
    assert messages[:2] == [
        "Add billing and shipping totals",
        "Fix rounding of parcel weight surcharges",
    ]
    assert messages[2].startswith("Rework the ledger\n\nRework the ledger Rework")
    assert len(messages[2].encode()) <= MAX_MESSAGE_BYTES
    hits = json.loads(
        kiln("search", "compute total wrong for parcel surcharge", "--json", cwd=repo).stdout
    )
    assert hits[0]["path"] == "shipping.py", hits  # the fix's message still votes
