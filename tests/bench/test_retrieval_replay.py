"""The replay tool's claim: ranks scored on saved snapshots equal an end-to-end history run."""

from __future__ import annotations

import json
import os
import sqlite3
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


def _repo(repo: Path) -> None:
    commit = committing_repo(repo)
    commit(
        "Initial",
        {
            "crates/parser/src/header.rs": "fn parse_header(line: &str) -> usize { line.len() }\n",
            "crates/printer/src/line.rs": 'fn print_line(line: &str) { println!("{}", line); }\n',
        },
    )
    commit(
        "parser: fix crash on an empty header line",
        {"crates/parser/src/header.rs": "fn parse_header(l: &str) -> usize { l.len().max(1) }\n"},
    )
    commit(
        "printer: fix a line printed twice",
        {"crates/printer/src/line.rs": 'fn print_line(l: &str) { print!("{}", l); }\n'},
    )


def test_replayed_ranks_equal_an_end_to_end_run(tmp_path: Path) -> None:
    repo, data = tmp_path / "repo", tmp_path / "replay"
    _repo(repo)
    saved = _run("bench.retrieval_replay", "save", "--data", str(data), "--repo", str(repo))
    assert saved.returncode == 0, saved.stderr
    assert "repo: 2 snapshots saved" in saved.stdout
    ranks = tmp_path / "ranks.json"
    scored = _run("bench.retrieval_replay", "score", "--data", str(data), "--save", str(ranks))
    assert scored.returncode == 0, scored.stderr
    assert scored.stdout.startswith("repo")
    live = _run(
        "bench.retrieval",
        "--json",
        "--per-query",
        "--methods",
        "kiln",
        "history",
        "--repo",
        str(repo),
    )
    assert live.returncode == 0, live.stderr
    (row,) = json.loads(live.stdout)
    assert json.loads(ranks.read_text()) == {"repo": row["per_query"]}
    assert set(row["per_query"].values()) == {1}


def test_a_snapshot_saved_before_a_schema_step_is_brought_up_and_scored(tmp_path: Path) -> None:
    repo, data = tmp_path / "repo", tmp_path / "replay"
    _repo(repo)
    assert (
        _run("bench.retrieval_replay", "save", "--data", str(data), "--repo", str(repo)).returncode
        == 0
    )
    before = _run("bench.retrieval_replay", "score", "--data", str(data), "--per-query")
    assert before.returncode == 0, before.stderr
    snapshots = sorted((data / "repo").glob("*.db"))
    assert len(snapshots) == 2
    for db in snapshots:  # as an indexer before ``m009_files_generated`` left them
        conn = sqlite3.connect(db)
        conn.execute("ALTER TABLE files DROP COLUMN generated")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm009_files_generated'")
        conn.commit()
        conn.close()
    after = _run("bench.retrieval_replay", "score", "--data", str(data), "--per-query")
    assert after.returncode == 0, after.stderr
    assert after.stderr == ""  # no snapshot skipped
    assert after.stdout == before.stdout  # both queries scored, at the same ranks
    assert after.stdout.startswith("repo               2  1.000")
    for db in snapshots:
        conn = sqlite3.connect(db)
        assert "generated" in [row[1] for row in conn.execute("PRAGMA table_info(files)")]
        conn.close()


def test_score_without_saved_sets_is_one_clear_line(tmp_path: Path) -> None:
    proc = _run("bench.retrieval_replay", "score", "--data", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: no saved sets in {tmp_path} (run `save` first)"
    ]


def test_why_explains_each_query_with_the_searchs_own_files(tmp_path: Path) -> None:
    repo, data = tmp_path / "repo", tmp_path / "replay"
    _repo(repo)
    assert (
        _run("bench.retrieval_replay", "save", "--data", str(data), "--repo", str(repo)).returncode
        == 0
    )
    both = ["--data", str(data), "--set", "repo"]
    quiet = _run("bench.retrieval_why", *both)  # both fixes are found first: no miss to show
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == ""
    shown = _run("bench.retrieval_why", *both, "--min-rank", "0")
    assert shown.returncode == 0, shown.stderr
    heads = [line for line in shown.stdout.splitlines() if line.startswith("== repo ")]
    assert [h.split(" rank=")[1].split()[0] for h in heads] == ["1", "1"]
    assert "* crates/parser/src/header.rs" in shown.stdout  # the fixed file, starred
    assert "lex#0" in shown.stdout  # its block's place in the block search's list
    missing = _run("bench.retrieval_why", "--data", str(data), "--set", "nope")
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [f"error: no saved set nope in {data}"]
