"""A checkout with folders nested 1,100 deep (`a/a/…/a`, a 2 kB path git stores fine;
docs/security.md section 2). Python 3.11's `os.walk` recurses once per level: before, any read
deny rule with `**` made every session start end in a RecursionError traceback, `list_files`
and `grep` failed the same way, and `kiln index --watch` died in a traceback. Through the real
`kiln run` and `kiln index --watch`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

pytestmark = pytest.mark.e2e

DEPTH = 1_100


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "repo"
    (root / ".kiln").mkdir(parents=True)
    (root / ".kiln" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Read(**/secret.txt)"]}})
    )
    (root / "top.py").write_text("def top_function():\n    pass\n")
    folder = str(root)
    for _ in range(DEPTH):  # os.makedirs recurses per level too
        folder += "/a"
        os.mkdir(folder)
    Path(folder, "deep.py").write_text("def deepest_function():\n    pass\n")
    yield root
    _remove_bottom_up(root, DEPTH)


def _remove_bottom_up(root: Path, depth: int) -> None:
    """pytest's removal of old temporary folders recurses per level and ends every later
    run in a RecursionError at exit: take the chain down level by level from its bottom."""
    for level in range(depth, 0, -1):
        folder = str(root) + "/a" * level
        for entry in os.scandir(folder):
            if not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.path)
        os.rmdir(folder)


def test_a_session_and_its_tools_survive_deep_folders(
    repo: Path, tmp_path: Path, kiln_home: Path
) -> None:
    (kiln_home / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Read(**/.env)"]}})
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "list_files", "input": {}}]},
        {"tool_calls": [{"name": "grep", "input": {"pattern": "def \\w+_function"}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": "echo ran-ok"}}]},
        "done",
    ]))  # fmt: skip
    proc = kiln_run(repo, home=tmp_path, kiln_home=kiln_home, script=script, output="stream-json")
    assert proc.returncode == 0, proc.stderr
    listing, grep, command = tool_results(stream_transcript(proc))
    assert "top.py" in listing and "levels down not listed" in listing
    assert "top.py:1: def top_function():" in grep
    assert "ran-ok" in command


def test_kiln_index_watch_says_it_cannot_watch_in_one_line(repo: Path, kiln_home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "index", "--watch", "."],
        cwd=repo, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={**os.environ, "KILN_HOME": str(kiln_home)},
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "kiln: skipped " + "a/" * 65 + ": more than 64 folders deep",  # the index's own bound
        f"kiln: cannot watch {repo}: its folders nest deeper than the watcher can follow"
        " (index without --watch; run `kiln index` again after changes)",
    ]
