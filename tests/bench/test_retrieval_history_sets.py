"""The history sets' mining for every language the bench covers: what counts as source, what a
query is made of, snapshots of clones that lack blobs, and the per-query hits file that says
where each fixed file was lost. Real git repositories in temp folders."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.repos import committing_repo

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("src/click/core.py", True),
        ("tests/test_core.py", False),
        ("crates/core/src/lib.rs", True),
        ("crates/core/tests/it.rs", False),
        ("crates/core/benches/speed.rs", False),
        ("build.rs", False),
        ("internal/router/tree.go", True),
        ("internal/router/tree_test.go", False),
        ("pkg/api/testdata/fixture.go", False),
        ("lib/adapters/http.js", True),
        ("lib/adapters/http.test.js", False),
        ("src/__tests__/parse.ts", False),
        ("types/index.d.ts", False),
        ("src/main/java/com/google/gson/Gson.java", True),
        ("src/test/java/com/google/gson/GsonTest.java", False),
        ("gson/src/main/java/com/google/gson/JsonParserTest.java", False),
        ("README.md", False),
        ("crates/biome_lsp/src/server.tests.rs", False),
        ("crates/biome_lsp/src/server_test_utils.rs", False),
        ("crates/core/src/tests.rs", False),
        ("crates/core/src/latest.rs", True),
        ("crates/core/src/test_helpers.rs", True),
        ("jmh-benchmarks/src/main/java/org/apache/kafka/jmh/FooBenchmark.java", False),
        ("crates/benchsuite/src/main.rs", True),
    ],
)
def test_source_files_of_every_mined_language(path: str, source: bool) -> None:
    from bench.datasets.history import is_source

    assert is_source(path) is source


@pytest.mark.parametrize(
    "path", [".eslintrc.cjs", "karma.conf.js", "index.d.cts", "vite.config.ts"]
)
def test_tooling_files_of_js_projects_are_not_source(path: str) -> None:
    from bench.datasets.history import is_source

    assert not is_source(path)


def test_a_leading_tracker_key_is_not_part_of_a_non_python_query(tmp_path: Path) -> None:
    from bench.datasets import history

    repo = tmp_path / "repo"
    commit = committing_repo(repo)
    commit("Initial", {"core/Log.java": "class Log {}\n", "pkg/core.py": "x = 1\n"})
    commit(
        "KAFKA-16511: Fix the leaking tiered segments (#15817)",
        {"core/Log.java": "class Log {int a;}\n"},
    )
    commit(
        "[KAFKA-1, KAFKA-2] Fix wrong offsets on UTF-8 keys",
        {"core/Log.java": "class Log {int b;}\n"},
    )
    commit("ABC-12 fix crash in the python parser", {"pkg/core.py": "x = 2\n"})
    fixes = history.mine(repo)
    assert [f.subject for f in fixes] == [
        "Fix the leaking tiered segments",
        "Fix wrong offsets on UTF-8 keys",
        "ABC-12 fix crash in the python parser",  # Python sets' queries are left as they were
    ]


def test_a_snapshot_leaves_out_files_whose_blob_the_clone_lacks(tmp_path: Path) -> None:
    from bench.datasets import history

    repo = tmp_path / "repo"
    commit = committing_repo(repo)
    commit("Initial", {"src/lib.rs": "fn a() {}\n", "big/data.snap": "huge\n"})
    commit("Fix a crash in the parser", {"src/lib.rs": "fn a() { 1; }\n"})
    blob = subprocess.run(
        ["git", "rev-parse", "HEAD:big/data.snap"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    (repo / ".git/objects" / blob[:2] / blob[2:]).unlink()  # as in a mirror capped by size
    (fix,) = history.mine(repo)
    snap = history.Snapshot(repo, tmp_path / "wt")
    snap.goto(fix.parent)
    assert (snap.root / "src/lib.rs").read_text() == "fn a() {}\n"
    assert not (snap.root / "big/data.snap").exists()
    assert snap.excluded == {"big/data.snap"}
    assert set(snap.blobs((".rs", ".snap"))) == {"src/lib.rs"}
    snap.goto(fix.sha)
    assert (snap.root / "src/lib.rs").read_text() == "fn a() { 1; }\n"


def test_hits_file_says_where_each_fixed_file_ranked_and_why(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    commit = committing_repo(repo)
    commit(
        "Initial",
        {
            "src/parser.rs": "fn parse_header(line: &str) -> usize { line.len() }\n",
            "src/printer.rs": 'fn print_line(line: &str) { println!("{}", line); }\n',
        },
    )
    commit(
        "parser: fix crash on an empty header line",
        {"src/parser.rs": "fn parse_header(line: &str) -> usize { line.len().max(1) }\n"},
    )
    hits = tmp_path / "hits.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.retrieval", "--json", "history", "--repo", str(repo)]
        + ["--hits", str(hits), "--stages"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    import json

    rows = [json.loads(line) for line in hits.read_text().splitlines()]
    assert {r["method"] for r in rows} == {"kiln", "bm25-file"}
    kiln = next(r for r in rows if r["method"] == "kiln")
    assert kiln["relevant"] == ["src/parser.rs"] and kiln["top"][0] == "src/parser.rs"
    assert kiln["rank"] == 1 and kiln["stages"]["final_rank"] == 1
    assert "header" in kiln["stages"]["relevant_terms"]["src/parser.rs"]
    assert "stages" not in next(r for r in rows if r["method"] == "bm25-file")
    report = subprocess.run(
        [sys.executable, "-m", "bench.retrieval_stages", str(hits)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert report.returncode == 0 and "rank 1" in report.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "bench.retrieval_stages", str(tmp_path / "none.jsonl")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: cannot read")
