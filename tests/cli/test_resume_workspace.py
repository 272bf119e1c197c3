"""`kiln run --resume S` continues S in S's own workspace. Named with another `--root`, it is
refused in one line before anything runs (the edits went to S's workspace while `--root`, and
with `--ci` the patch and the verification, named the other); from another folder without
`--root`, it says where it works."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(tmp_path: Path, cwd: Path, steps: list, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KILN_PROVIDER": "scripted",
           "KILN_SCRIPT": str(script)}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "yolo", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def messages(kiln_home: Path, session_id: str) -> int:
    with sqlite3.connect(kiln_home / "sessions.db") as db:
        query = "SELECT count(*) FROM messages WHERE session_id = ?"
        return int(db.execute(query, (session_id,)).fetchone()[0])


WRITE = [{"tool_calls": [{"name": "write_file", "input": {"path": "made.txt", "content": "x"}}]},
         "done"]  # fmt: skip


def test_resume_runs_in_the_sessions_workspace(tmp_path: Path, kiln_home: Path) -> None:
    first, other = tmp_path / "first", tmp_path / "other"
    first.mkdir()
    other.mkdir()
    started = run(tmp_path, first, ["ok"], "--output-format", "json", "hi")
    assert started.returncode == 0, started.stderr
    sid = json.loads(started.stdout)["session_id"]
    count = messages(kiln_home, sid)

    named = run(tmp_path, other, WRITE, "--resume", sid, "--root", str(other), "write")
    assert named.returncode == 2 and named.stdout == ""
    assert named.stderr.count("\n") == 1 and str(first) in named.stderr
    assert not (first / "made.txt").exists() and not (other / "made.txt").exists()
    assert messages(kiln_home, sid) == count

    moved = run(tmp_path, other, WRITE, "--resume", sid, "write")
    assert moved.returncode == 0, moved.stderr
    assert f"kiln: session {sid} works in {first}" in moved.stderr
    assert (first / "made.txt").exists() and not (other / "made.txt").exists()

    same = run(tmp_path, first, ["done"], "--resume", sid, "--root", str(first), "again")
    assert same.returncode == 0 and "works in" not in same.stderr
