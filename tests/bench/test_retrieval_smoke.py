"""The retrieval benchmark's arithmetic, on corpora small enough to check by hand.

If recall or MRR were computed wrongly every figure in bench/README.md would be too, so the
metric functions, the BM25 baseline, docstring stripping and fix-commit mining are pinned here.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT))
    return importlib.import_module("bench.retrieval")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    files = {
        "auth/login.py": "def check_password(user, password):\n    return hash_pw(password) == user.pw\n",
        "net/http_client.py": "class HttpClient:\n    def send_request(self, url):\n"
        "        return self.session.get(url, timeout=5)\n",
        "util/strings.py": "def slugify(title):\n    return title.lower().replace(' ', '-')\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_recall_and_mrr_from_ranks(bench: ModuleType) -> None:
    ranks = [1, 3, None, 7]
    assert bench.recall_at(ranks, 1) == 0.25
    assert bench.recall_at(ranks, 5) == 0.5
    assert bench.recall_at(ranks, 10) == 0.75
    assert bench.mrr(ranks) == pytest.approx((1 + 1 / 3 + 1 / 7) / 4)
    assert bench.mrr([11]) == 0.0  # MRR is cut off at 10
    assert bench.summarize([]) == {"R@1": 0.0, "R@5": 0.0, "R@10": 0.0, "MRR": 0.0}


def test_bootstrap_interval_and_pooled_rows(bench: ModuleType) -> None:
    assert bench.bootstrap_ci([1] * 20, 1) == (1.0, 1.0)
    lo, hi = bench.bootstrap_ci([1, None] * 75, 1)
    assert lo < 0.5 < hi and hi - lo < 0.25
    rows = [
        bench.Result("history(a, 2 fixes)", "kiln", 2, {}, None, 1.0, 2.0, {"q1": 1, "q2": None}),
        bench.Result("history(b, 1 fixes)", "kiln", 1, {}, None, 3.0, 5.0, {"q3": 4}),
        bench.Result("stdlib(x)", "kiln", 1, {}, None, 1.0, 1.0, {"s": 1}),
    ]
    (pooled,) = bench.pooled(rows)
    assert pooled.dataset == "history(pooled: a+b, 3 fixes)" and pooled.queries == 3
    assert pooled.file["R@1"] == 0.3333 and pooled.file["R@5"] == 0.6667
    assert pooled.search_ms == 3.0 and pooled.index_seconds == 4.0


def test_block_hits_collapse_to_files_and_blocks_must_sit_inside_the_definition(
    bench: ModuleType,
) -> None:
    from bench.datasets import Hit, Query, Target

    target = Target("net/http_client.py", line=2, start=2, end=3)
    query = Query("q", "send a request", frozenset({"net/http_client.py"}), (target,))
    hits = [
        Hit("util/strings.py", 1, 2),
        Hit("util/strings.py", 1, 1),
        Hit("net/http_client.py", 1, 3),  # the whole class: right file, too coarse a block
        Hit("net/http_client.py", 2, 3),  # the method itself
    ]
    assert bench.file_ranking(hits) == ["util/strings.py", "net/http_client.py"]
    scores = bench.Scores()
    scores.add(query, hits, whole_file=False)
    assert scores.file_ranks == [2]
    assert scores.block_ranks == [4]


def test_whole_file_bm25_ranks_the_file_that_shares_the_words(
    bench: ModuleType, corpus: Path
) -> None:
    bm25 = bench.WholeFileBM25()
    bm25.set_corpus(bench.python_files(corpus), corpus)
    assert [h.path for h in bm25.search("send HTTP request")][0] == "net/http_client.py"
    assert [h.path for h in bm25.search("check the password")] == ["auth/login.py"]
    assert bm25.search("nothing matches zebra") == []
    from bench.retrieval_baseline import tokenize

    assert tokenize("parseHTTPResponse_v2 of the x_y") == ["parse", "http", "response"]


def test_stripping_docstrings_keeps_every_definition_on_its_line(bench: ModuleType) -> None:
    from bench.datasets.stdlib import strip_docstrings

    source = (
        '"""Module doc."""\nimport os\n\n\nclass A:\n    """Class doc\n\n    more.\n    """\n\n'
        '    def f(self):\n        """Only a docstring: body must stay valid."""\n\n\n'
        'def g(): """inline é"""; return 1\n'
    )
    stripped = strip_docstrings(source)
    before, after = ast.parse(source), ast.parse(stripped)
    lines = lambda t: [(n.name, n.lineno) for n in ast.walk(t) if hasattr(n, "name")]  # noqa: E731
    assert lines(before) == lines(after)
    assert "doc" not in stripped and stripped.count("\n") == source.count("\n")
    assert all(ast.get_docstring(n) is None for n in ast.walk(after) if hasattr(n, "body"))


def test_history_mining_keeps_source_fixes_and_checks_out_the_parent(
    bench: ModuleType, tmp_path: Path
) -> None:
    from bench.datasets import history

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()

    def commit(message: str, files: dict[str, str]) -> None:
        for rel, text in files.items():
            (repo / rel).write_text(text)
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
        subprocess.run(
            ["git", "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", message],
            cwd=repo,
            check=True,
        )

    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    commit("Initial", {"pkg/core.py": "x = 1\n", "tests/test_core.py": "pass\n"})
    commit("Fix crash when parsing empty input (#12)", {"pkg/core.py": "x = 2\n"})
    commit("Fix typo in docs", {"pkg/core.py": "x = 3\n"})
    commit("Fix flaky check", {"tests/test_core.py": "assert 1\n"})
    commit("Add new parser", {"pkg/new.py": "y = 1\n"})
    commit("Fix crash when parsing empty input (#13)", {"pkg/core.py": "x = 4\n"})  # a repeat

    fixes = history.mine(repo)
    assert [(f.subject, f.files) for f in fixes] == [
        ("Fix crash when parsing empty input", ("pkg/core.py",))
    ]
    snap = history.Snapshot(repo, tmp_path / "wt")
    snap.goto(fixes[0].parent)
    assert (snap.root / "pkg/core.py").read_text() == "x = 1\n"
    assert set(snap.blobs()) == {"pkg/core.py", "tests/test_core.py"}
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=snap.root, capture_output=True, text=True, check=True
    )
    assert head.stdout.strip() == fixes[0].parent  # the index sees no later history
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True
    )
    assert status.stdout == ""  # the user's checkout is untouched

    with pytest.raises(history.DatasetError) as err:
        history.mine(tmp_path / "wt" / "pkg")  # a plain folder, not a repository
    assert err.value.exit_code == 2 and err.value.hint


def test_cli_reports_a_bad_repo_in_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench/retrieval.py"),
            "--methods",
            "bm25-file",
            "history",
            "--repo",
            str(tmp_path / "missing"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: not a directory") and "Traceback" not in proc.stderr


def test_stdlib_corpus_never_overwrites_a_folder_it_did_not_write(
    bench: ModuleType, tmp_path: Path
) -> None:
    from bench.datasets import DatasetError, stdlib

    src = tmp_path / "lib"
    src.mkdir()
    body = (
        "def parse(text):\n    "
        + '"""Split the given text into words for the parser."""'
        + "\n    return text.split()\n"
    )
    (src / "mod.py").write_text(body * 80)  # big enough to be eligible
    out = tmp_path / "corpus"
    queries = stdlib.build(out, modules=5, queries=5, source_root=src)
    assert (out / "mod.py").exists() and "Split the given" not in (out / "mod.py").read_text()
    assert queries == []  # forty definitions share one summary: ambiguous, so none is asked
    stdlib.build(out, modules=5, queries=5, source_root=src)  # rebuilding its own corpus is fine

    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    with pytest.raises(DatasetError) as err:
        stdlib.build(precious, source_root=src)
    assert (precious / "keep.txt").read_text() == "mine" and err.value.hint


def test_weights_file_overrides_only_literal_constants(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import indexer.weights as live

    for name in ("FUSION_K", "COLUMN_WEIGHTS"):
        monkeypatch.setattr(live, name, getattr(live, name))  # restored after the test
    old = tmp_path / "weights.py"
    old.write_text(
        'FUSION_K = 99.0\nCOLUMN_WEIGHTS: dict = {"text": 3.0}\nTOUCHED = open("x")\nlower = 1\n'
    )
    applied = bench.load_weights(old)
    assert applied == {"FUSION_K": 99.0, "COLUMN_WEIGHTS": {"text": 3.0}}
    assert live.FUSION_K == 99.0 and not hasattr(live, "TOUCHED")
    with pytest.raises(bench.DatasetError):
        bench.load_weights(tmp_path / "missing.py")


def test_names_set_asks_for_unique_public_definitions(bench: ModuleType, tmp_path: Path) -> None:
    from bench.datasets import names

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg/http.py").write_text(
        "class HTTPAdapter:\n    def send_request(self):\n        pass\n"
        "    def _private_helper(self):\n        pass\n\n"
        "@decorated\ndef parse_url(text):\n    pass\n"
    )
    (repo / "pkg/other.py").write_text("def parse_url(x):\n    pass\n\ndef close():\n    pass\n")
    (repo / "tests/test_http.py").write_text("def test_send_request():\n    pass\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "init"],
        cwd=repo,
        check=True,
    )
    assert names.words("HTTPAdapter") == ["http", "adapter"]
    qs = names.build(repo, tmp_path / "checkout", queries=10, seed=1)
    # parse_url is defined twice (no single answer), close is one word, tests are not library code
    assert sorted(q.text for q in qs) == ["http adapter", "send request"]
    send = next(q for q in qs if q.text == "send request")
    assert send.files == {"pkg/http.py"} and send.targets[0].line == 2
    results = bench.run_names(["bm25-file"], repo, queries=10, seed=1, work=tmp_path / "w")
    assert results[0].queries == 2 and results[0].file["R@5"] == 1.0
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True)
    assert status.stdout == b""  # the user's clone is only read


def test_saved_runs_pool_to_what_one_run_over_all_sets_prints(
    bench: ModuleType, tmp_path: Path
) -> None:
    import json

    a = bench.Result("history(a, 2 fixes)", "kiln", 2, {}, None, 1.0, 2.0, {"q1": 1, "q2": None})
    b = bench.Result("history(b, 1 fixes)", "kiln", 1, {}, None, 3.0, 5.0, {"q3": 4})
    (tmp_path / "a.json").write_text(bench.to_json([a, *bench.pooled([a])], per_query=True))
    (tmp_path / "b.json").write_text(bench.to_json([b], per_query=True))
    (tmp_path / "flat.json").write_text(bench.to_json([b], per_query=False))

    def pool(*names: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "bench.retrieval_pool", "--json"]
            + [str(tmp_path / n) for n in names],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )

    done = pool("a.json", "b.json")
    assert done.returncode == 0, done.stderr
    rows = {r["dataset"]: r for r in json.loads(done.stdout)}
    expected = bench.pooled([a, b])[0]
    assert (
        rows[expected.dataset]["file"]
        == expected.file
        == {
            "R@1": 0.3333,
            "R@5": 0.6667,
            "R@10": 0.6667,
            "MRR": 0.4167,
        }
    )
    assert rows[expected.dataset]["file_ci"]["R@1"] == list(expected.file_ci["R@1"])
    twice = pool("b.json", "b.json")
    assert twice.returncode == 2 and "appears twice" in twice.stderr
    flat = pool("flat.json")
    assert flat.returncode == 2 and "without --per-query" in flat.stderr
