"""The file-aggregation tool's claim: its ``best block`` row is the search's own file order,
so every other row is measured against what ``retrieval_replay score`` gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.repos import committing_repo

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, env=env
    )


def test_best_block_row_equals_the_replayed_ranks(tmp_path: Path) -> None:
    repo, data = tmp_path / "repo", tmp_path / "replay"
    commit = committing_repo(repo)
    commit(
        "Initial",
        {
            "src/header.py": "def parse_header(line):\n    return len(line)\n",
            "src/printer.py": "def print_line(line):\n    print(line)\n",
            "tests/test_header.py": "def test_parse_header_empty():\n    assert True\n",
        },
    )
    commit(
        "Fix crash on an empty header line",
        {"src/header.py": "def parse_header(line):\n    return max(len(line), 1)\n"},
    )
    commit(
        "Fix a line printed twice by the printer",
        {"src/printer.py": "def print_line(line):\n    print(line, end='')\n"},
    )
    saved = _run("bench.retrieval_replay", "save", "--data", str(data), "--repo", str(repo))
    assert saved.returncode == 0, saved.stderr
    scored = _run("bench.retrieval_replay", "score", "--data", str(data), "--set", "repo")
    assert scored.returncode == 0, scored.stderr
    figures = scored.stdout.split()[2:7]  # R@1 / R@5 / R@10
    shown = _run("bench.retrieval_aggregate", "--data", str(data), "--set", "repo")
    assert shown.returncode == 0, shown.stderr
    rows = shown.stdout.splitlines()
    assert rows[0].startswith("best block (the search's order)")
    assert f"repo {''.join(figures)}" in rows[0]
    assert rows[0].endswith("moved +0 -0")
    assert len(rows) > 10  # the other rules, each on its own line
    assert all(" moved +" in row for row in rows)


def test_unknown_set_is_one_clear_line(tmp_path: Path) -> None:
    proc = _run("bench.retrieval_aggregate", "--data", str(tmp_path), "--set", "nope")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"error: no saved set nope in {tmp_path}"]
