"""Retrieval-quality benchmark for the code index: recall@1/5/10 and MRR on sets built from real
code that nothing in Kiln is tuned on, against a whole-file BM25 baseline run in the same process.

    python -m bench.retrieval stdlib [--modules 60] [--queries 300] [--json]
    python -m bench.retrieval history --repo PATH [--repo PATH ...] [--max-commits 150] [--json]
    python -m bench.retrieval names --repo PATH [--repo PATH ...] [--queries 200] [--json]

File-level: a method's hits are collapsed to files in rank order; R@k is the share of queries
with at least one relevant file in the top k, MRR is over the top 10. Block-level (stdlib, names):
a hit counts when its span contains the definition's line and stays inside the definition.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Protocol, TextIO

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.datasets import DatasetError, Hit, Query  # noqa: E402
from bench.retrieval_baseline import WholeFileBM25, python_files  # noqa: E402
from bench.retrieval_metrics import (  # noqa: E402, F401  (re-exported for the tests)
    KS,
    Scores,
    block_matches,
    bootstrap_ci,
    file_ranking,
    first_rank,
    mrr,
    recall_at,
    summarize,
)
from bench.retrieval_report import Result, pooled, table, to_json  # noqa: E402, F401

DEPTH = 50  # hits asked of each method; block hits collapse to fewer files


# ---------------------------------------------------------------- the index under test


class Method(Protocol):
    name: str
    whole_file: bool

    def search(self, query: str, k: int = DEPTH) -> list[Hit]: ...


class KilnIndex:
    """Kiln's own index, driven exactly as the agent drives it: update(), then search()."""

    name = "kiln"
    whole_file = False

    def __init__(self, root: Path) -> None:
        from indexer import Index  # imported late: the baseline runs without the index

        self._index = Index(root)

    def update(self) -> None:
        self._index.update()

    def search(self, query: str, k: int = DEPTH) -> list[Hit]:
        return [Hit(h.path, h.start_line, h.end_line) for h in self._index.search(query, k=k)]

    def connection(self):  # noqa: ANN201  (sqlite3.Connection; the diagnostics read it)
        return self._index._conn

    def close(self) -> None:
        close = getattr(self._index, "close", None)
        if callable(close):
            close()


# ---------------------------------------------------------------- runs


def _make(name: str, root: Path) -> WholeFileBM25 | KilnIndex:
    if name == "bm25-file":
        return WholeFileBM25()
    if name == "kiln":
        return KilnIndex(root)
    raise DatasetError(f"unknown method {name!r}", hint="choose from kiln, bm25-file")


def _refresh(method: WholeFileBM25 | KilnIndex, root: Path, files: dict[str, str]) -> float:
    """Bring a method's index up to date with ``root``; return the seconds it took."""
    started = time.perf_counter()
    if isinstance(method, WholeFileBM25):
        method.set_corpus(files, root)
    else:
        method.update()
    return time.perf_counter() - started


def _result(
    dataset: str,
    method: WholeFileBM25 | KilnIndex,
    scores: Scores,
    qids: list[str],
    index_s: float,
    search_s: float,
) -> Result:
    n = len(scores.file_ranks)
    block = summarize(scores.block_ranks) if scores.block_ranks is not None else None
    return Result(
        dataset,
        method.name,
        n,
        summarize(scores.file_ranks),
        block,
        round(index_s, 3),
        round(1000 * search_s / max(n, 1), 2),
        dict(zip(qids, scores.file_ranks, strict=True)),
        {f"R@{k}": bootstrap_ci(scores.file_ranks, k) for k in (1, 5)},
    )


def run_stdlib(
    methods: list[str], corpus: Path, *, modules: int, queries: int, seed: int
) -> list[Result]:
    from bench.datasets import stdlib

    qs = stdlib.build(corpus, modules=modules, queries=queries, seed=seed)
    version = f"py{sys.version_info[0]}.{sys.version_info[1]}"
    return _run_corpus(methods, corpus, qs, f"stdlib({version}, {modules} modules, seed {seed})")


def run_names(
    methods: list[str], repo: Path, *, queries: int, seed: int, work: Path
) -> list[Result]:
    """Navigational queries (a definition's name as words) against the repository at HEAD."""
    from bench.datasets import names

    qs = names.build(repo, work / "checkout", queries=queries, seed=seed)
    dataset = f"names({repo.resolve().name}, {len(qs)} names, seed {seed})"
    return _run_corpus(methods, work / "checkout", qs, dataset)


def _run_corpus(methods: list[str], corpus: Path, qs: list[Query], dataset: str) -> list[Result]:
    """One corpus, every query: each method indexes it once, then answers them all."""
    files = python_files(corpus)
    results = []
    for name in methods:
        method = _make(name, corpus)
        index_s = _refresh(method, corpus, files)
        scores, started = Scores(), time.perf_counter()
        for q in qs:
            scores.add(q, method.search(q.text), whole_file=method.whole_file)
        results.append(
            _result(
                dataset, method, scores, [q.qid for q in qs], index_s, time.perf_counter() - started
            )
        )
        if isinstance(method, KilnIndex):
            method.close()
    return results


def run_history(
    methods: list[str],
    repo: Path,
    *,
    max_commits: int,
    work: Path,
    hits_log: TextIO | None = None,
    stages: bool = False,
) -> list[Result]:
    """Every query against its own parent snapshot; indexes follow the snapshot incrementally.
    With ``hits_log``, each query's top files per method are written there as JSON lines (with
    ``stages``, Kiln's rows also say where in the ranking the fixed file was lost)."""
    from bench.datasets import history

    qs = history.queries(history.mine(repo, max_commits=max_commits))
    suffixes = history.suffixes_of(qs)
    snap = history.Snapshot(repo, work / "worktree")
    snap.goto(qs[0].snapshot)
    made = [_make(name, snap.root) for name in methods]
    scores = [Scores() for _ in made]
    index_s = [0.0] * len(made)
    search_s = [0.0] * len(made)
    for q in qs:
        if q.snapshot != snap.commit:
            snap.goto(q.snapshot)
        files = snap.blobs(suffixes)
        for i, method in enumerate(made):
            index_s[i] += _refresh(method, snap.root, files)
            started = time.perf_counter()
            hits = method.search(q.text)
            search_s[i] += time.perf_counter() - started
            scores[i].add(q, hits, whole_file=method.whole_file)
            if hits_log is not None:
                from bench.retrieval_stages import record

                conn = method.connection() if stages and isinstance(method, KilnIndex) else None
                record(hits_log, repo.resolve().name, q, method.name, hits, conn)
    dataset = f"history({repo.resolve().name}, {len(qs)} fixes)"
    out = [
        _result(dataset, m, s, [q.qid for q in qs], i, t)
        for m, s, i, t in zip(made, scores, index_s, search_s, strict=True)
    ]
    for method in made:
        if isinstance(method, KilnIndex):
            method.close()
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.retrieval", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--methods", default="kiln,bm25-file", help="comma-separated: kiln, bm25-file"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--per-query", action="store_true", help="with --json: each query's file rank"
    )
    parser.add_argument(
        "--weights", type=Path, help="ranking constants from this copy of indexer/weights.py"
    )
    sub = parser.add_subparsers(dest="dataset", required=True)
    sl = sub.add_parser("stdlib", help="stdlib definitions without docstrings, queried by them")
    sl.add_argument("--modules", type=int, default=60)
    sl.add_argument("--queries", type=int, default=300)
    sl.add_argument("--seed", type=int, default=1234)
    sl.add_argument("--data", type=Path, default=None, help="corpus dir (default: a temp dir)")
    hi = sub.add_parser("history", help="bug-fix subjects -> files the fix touched")
    hi.add_argument("--repo", type=Path, action="append", required=True, help="a local git clone")
    hi.add_argument("--max-commits", type=int, default=150)
    hi.add_argument(
        "--hits", type=Path, help="write each query's top 20 files per method here (JSON lines)"
    )
    hi.add_argument(
        "--stages",
        action="store_true",
        help="with --hits: also Kiln's rank of the fixed file after each ranking step",
    )
    na = sub.add_parser("names", help="a definition's name as words -> its file, at HEAD")
    na.add_argument("--repo", type=Path, action="append", required=True, help="a local git clone")
    na.add_argument("--queries", type=int, default=200)
    na.add_argument("--seed", type=int, default=1)
    return parser.parse_args(argv)


def load_weights(path: Path) -> dict[str, object]:
    """Ranking constants from another copy of ``indexer/weights.py`` (e.g. an older commit's),
    applied for this run only, so before/after figures come from one script and one index
    version. Only literal top-level assignments are read; nothing in the file is executed."""
    import ast

    import indexer.weights as live

    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError) as exc:
        raise DatasetError(f"cannot read weights from {path}: {exc}") from exc
    found: dict[str, object] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id.isupper() and node.value is not None:  # type: ignore[attr-defined]
            try:
                found[target.id] = ast.literal_eval(node.value)  # type: ignore[attr-defined]
            except ValueError:
                continue
    if not found:
        raise DatasetError(
            f"no constants found in {path}", hint="pass a copy of indexer/weights.py"
        )
    for name, value in found.items():
        setattr(live, name, value)
    return found


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    results: list[Result] = []
    try:
        if args.weights is not None:
            load_weights(args.weights)
        with tempfile.TemporaryDirectory(prefix="kiln-retrieval-") as tmp:
            if args.dataset == "stdlib":
                corpus = args.data or Path(tmp) / "stdlib"
                results = run_stdlib(
                    methods, corpus, modules=args.modules, queries=args.queries, seed=args.seed
                )
            elif args.dataset == "names":
                for n, repo in enumerate(args.repo):
                    results += run_names(
                        methods, repo, queries=args.queries, seed=args.seed, work=Path(tmp) / str(n)
                    )
                results += pooled(results)
            else:
                with contextlib.ExitStack() as stack:
                    log = None
                    if args.hits is not None:
                        try:
                            log = stack.enter_context(args.hits.open("w", encoding="utf-8"))
                        except OSError as exc:
                            raise DatasetError(f"cannot write {args.hits}: {exc}") from exc
                    for n, repo in enumerate(args.repo):
                        results += run_history(
                            methods,
                            repo,
                            max_commits=args.max_commits,
                            work=Path(tmp) / str(n),
                            hits_log=log,
                            stages=args.stages,
                        )
                results += pooled(results)
    except DatasetError as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        print(f"error: {exc}{hint}", file=sys.stderr)
        return exc.exit_code
    print(to_json(results, per_query=args.per_query) if args.json else table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
