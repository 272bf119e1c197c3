"""Where a history query's fixed file is lost inside ``indexer.ranking.search``: its rank after
each step (BM25 candidates, the graph walk, their fusion, the path, name and scope priors, the
history votes), which query terms were scored at all, and what the history signals gave it
against the winner. Written next to each query's hits by ``python -m bench.retrieval history
--hits FILE --stages``; ``python -m bench.retrieval_stages FILE...`` counts the losses per set.

The real ``ranking.search`` runs with its BM25, graph and history steps watched (the module's
own helpers, wrapped for the one call), so the ranks are those of the code under test; if the
helpers change shape, the row carries the error instead of ending the run.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import TextIO

from bench.datasets import Hit, Query
from bench.retrieval_metrics import file_ranking, first_rank
from indexer import history_votes, ranking
from indexer import weights as W
from indexer.paths import is_example_path, is_test_path
from indexer.structure import code_query
from indexer.tokens import fts_match, query_terms, rarest_within, stem


def record(
    out: TextIO,
    name: str,
    q: Query,
    method: str,
    hits: list[Hit],
    conn: sqlite3.Connection | None = None,
) -> None:
    """One JSON line for a query and method: its top 20 files and the fixed file's rank, and
    with ``conn`` (Kiln's index) where in the ranking that file was lost."""
    files = file_ranking(hits)
    row = {
        "set": name,
        "qid": q.qid,
        "query": q.text,
        "snapshot": q.snapshot,
        "relevant": sorted(q.files),
        "method": method,
        "rank": first_rank([f in q.files for f in files]),
        "top": files[:20],
    }
    if conn is not None:
        row["stages"] = stages(conn, q.text, q.files)
    out.write(json.dumps(row) + "\n")
    out.flush()


def _file_rank(ids: list[int], meta: dict[int, tuple], relevant: frozenset[str]) -> int | None:
    seen: dict[str, None] = {}
    for block_id in ids:
        path = meta[block_id][0]
        if path not in seen:
            seen[path] = None
            if path in relevant:
                return len(seen)
    return None


def _path_rank(paths: list[str], relevant: frozenset[str]) -> int | None:
    return next((i for i, p in enumerate(paths, 1) if p in relevant), None)


def _df(conn: sqlite3.Connection, term: str) -> int:
    row = conn.execute("SELECT doc FROM blocks_vocab WHERE term = ?", (stem(term),)).fetchone()
    return row[0] if row else 0


def _kind(path: str) -> str:
    if is_test_path(path):
        return "test"
    if is_example_path(path):
        return "example"
    return "source"


def stages(conn: sqlite3.Connection, query: str, relevant: frozenset[str], k: int = 50) -> dict:
    try:
        return _stages(conn, query, relevant, k)
    except Exception as exc:  # a diagnostic must not end the benchmark run
        return {"error": f"{type(exc).__name__}: {exc}"}


def _stages(conn: sqlite3.Connection, query: str, relevant: frozenset[str], k: int) -> dict:
    seen: dict[str, object] = {}
    real = {n: getattr(ranking, n) for n in ("_lexical", "graph_rank", "_add_history")}

    def lexical(*args: object) -> list[int]:
        seen["lexical"] = out = real["_lexical"](*args)
        return out

    def pagerank(*args: object) -> list[int]:
        seen["graph"] = out = real["graph_rank"](*args)
        return out

    def add_history(conn_, terms_, ordered, meta, fused, *rest) -> None:  # noqa: ANN001, ANN002
        seen["prior"] = list(ordered)
        seen["meta"] = meta
        real["_add_history"](conn_, terms_, ordered, meta, fused, *rest)

    # The real search, watched at its steps (BM25 list, graph walk, the order history gets).
    for name, fn in (
        ("_lexical", lexical),
        ("graph_rank", pagerank),
        ("_add_history", add_history),
    ):
        setattr(ranking, name, fn)
    try:
        hits = ranking.search(conn, query, k)
    finally:
        for name, fn in real.items():
            setattr(ranking, name, fn)
    terms = query_terms(code_query(query)) or query_terms(query)  # as ranking.search does
    df = {t: _df(conn, t) for t in terms}
    selected, _ = rarest_within(terms, df, W.MATCH_DOC_BUDGET)
    lexical_ids = seen.get("lexical", [])
    graph_ids = list(seen.get("graph", []))[: W.GRAPH_CANDIDATES]
    meta = dict(seen.get("meta") or {})
    meta.update(ranking._meta(conn, [i for i in lexical_ids + graph_ids if i not in meta]))
    fused: dict[int, float] = defaultdict(float)
    for rank, block_id in enumerate(lexical_ids):
        fused[block_id] += W.LEXICAL_WEIGHT / (W.FUSION_K + rank + 1)
    for rank, block_id in enumerate(graph_ids):
        fused[block_id] += W.GRAPH_WEIGHT / (W.FUSION_K + rank + 1)
    fused_ids = sorted(fused, key=lambda i: (-fused[i], i))
    skipped = "prior" not in seen
    final = [h.path for h in hits]
    prior_files = list(dict.fromkeys(meta[i][0] for i in seen["prior"])) if not skipped else final
    winner = final[0] if final else None
    files = set(prior_files) | set(final)
    evidence = history_votes.file_scores(conn, terms, files | set(relevant))
    recent = history_votes.recent_activity(conn, files | set(relevant))
    # Which query terms the fixed file contains at all (any block, any column).
    present = {}
    for path in sorted(relevant):
        ids = [r[0] for r in conn.execute("SELECT id FROM blocks WHERE path = ?", (path,))]
        has = []
        if ids:
            marks = ",".join("?" * len(ids))
            for term in terms:
                row = conn.execute(
                    f"SELECT 1 FROM blocks_fts WHERE blocks_fts MATCH ? AND rowid IN ({marks}) "
                    "LIMIT 1",
                    (fts_match([term]), *ids),
                ).fetchone()
                if row:
                    has.append(term)
        present[path] = has
    n_blocks = conn.execute("SELECT count(*) FROM blocks").fetchone()[0]
    return {
        "terms": {t: df.get(t, 0) for t in terms},
        "scored_terms": selected,
        "blocks": n_blocks,
        "lexical_rank": _file_rank(lexical_ids, meta, relevant),
        "graph_rank": _file_rank(graph_ids, meta, relevant),
        "fused_rank": _file_rank(fused_ids, meta, relevant),
        "prior_rank": _path_rank(prior_files, relevant),
        "final_rank": _path_rank(list(dict.fromkeys(final)), relevant),
        "history_skipped": skipped,
        "top_before_history": prior_files[0] if prior_files else None,
        "winner": winner,
        "winner_kind": _kind(winner) if winner else None,
        "evidence": {p: round(evidence.get(p, 0.0), 3) for p in sorted(relevant)},
        "winner_evidence": round(evidence.get(winner, 0.0), 3) if winner else None,
        "recent": {p: round(recent.get(p, 0.0), 3) for p in sorted(relevant)},
        "winner_recent": round(recent.get(winner, 0.0), 3) if winner else None,
        "relevant_terms": present,
        "stems": {t: stem(t) for t in terms if stem(t) != t},
    }


# ---------------------------------------------------------------- reading a --hits file


def _crate(path: str) -> str:
    """The package a path belongs to: ``crates/X``, ``packages/X``, or the first folder
    above ``src`` (Maven/Gradle modules: ``clients/src/main/java/...`` -> ``clients``)."""
    parts = path.split("/")
    if len(parts) > 2 and parts[0] in ("crates", "packages", "libs", "modules"):
        return "/".join(parts[:2])
    if "src" in parts[:-1]:
        return "/".join(parts[: parts.index("src")]) or "."
    return parts[0] if len(parts) > 1 else "."


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def loss_table(rows: list[dict]) -> dict[str, Counter]:
    """Per set: how each Kiln query ended, by where its fixed file was lost."""
    out: dict[str, Counter] = defaultdict(Counter)
    for row in rows:
        if row["method"] != "kiln":
            continue
        c = out[row["set"]]
        st = row.get("stages") or {}
        c["queries"] += 1
        rank = row["rank"]
        if rank == 1:
            c["rank 1"] += 1
            if st.get("prior_rank") not in (1, None) and st.get("final_rank") == 1:
                c["  raised to 1 by history"] += 1
            continue
        c["missed @1"] += 1
        if "error" in st or not st:
            c["  (no stages)"] += 1
            continue
        if st["lexical_rank"] is None and st["graph_rank"] is None:
            c["  never a candidate (not in BM25 or graph lists)"] += 1
        elif st["prior_rank"] == 1:
            c["  first before history, pushed down by history"] += 1
        elif st["fused_rank"] == 1:
            c["  first after fusion, pushed down by the priors"] += 1
        else:
            c["  candidate, never first"] += 1
        if len(st["scored_terms"]) < len(st["terms"]):
            c["  some query terms not scored (doc budget)"] += 1
        rel = row["relevant"]
        have = set().union(*(set(v) for v in st["relevant_terms"].values())) if rel else set()
        if len(have) <= 1:
            c["  fixed file holds <= 1 query term"] += 1
        winner = row["top"][0] if row["top"] else ""
        kind = st.get("winner_kind") or "none"
        c[f"  winner is {kind}"] += 1
        if any(_name(winner) == _name(p) for p in rel):
            c["  winner has the fixed file's name (other folder)"] += 1
        if any(_crate(winner) == _crate(p) for p in rel):
            c["  winner in the fixed file's crate/module"] += 1
        else:
            c["  winner in another crate/module"] += 1
        if (st.get("winner_evidence") or 0) > max(st["evidence"].values(), default=0):
            c["  winner had more history evidence"] += 1
        if rank is None:
            c["  not in top 50 files"] += 1
        elif rank > 10:
            c["  rank 11-50"] += 1
    return out


_ORDER = (
    "queries",
    "rank 1",
    "  raised",
    "missed",
    "  never",
    "  candidate",
    "  first after",
    "  first before",
    "  rank",
    "  not in",
    "  some",
    "  fixed",
    "  winner is",
    "  winner in",
    "  winner has",
    "  winner had",
)


def _order(key: str) -> tuple[int, str]:
    for i, start in enumerate(_ORDER):
        if key.startswith(start):
            return i, key
    return len(_ORDER), key


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m bench.retrieval_stages", description="where fixed files were lost"
    )
    parser.add_argument("hits", type=Path, nargs="+", help="files written by --hits --stages")
    args = parser.parse_args(argv)
    rows = []
    for path in args.hits:
        try:
            rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        except (OSError, ValueError) as exc:
            print(f"error: cannot read {path}: {exc}", file=sys.stderr)
            return 2
    for name, counts in loss_table(rows).items():
        print(name)
        for key in sorted(counts, key=_order):
            print(f"  {key:<55} {counts[key]:>4}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
