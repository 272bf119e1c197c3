"""Where a history query's fixed file is lost inside ``indexer.ranking.search``: its rank after
each step (BM25 candidates, the graph walk, fusion, the path and name priors, the history
votes), which query terms were scored at all, and what the history signals gave it against
the winner. Written next to each query's hits by ``python -m bench.retrieval history --hits
FILE --stages``; read by hand (see ``bench/README.md``, large trees).

It re-runs the steps of ``ranking.search`` from the ranking module's own helpers, so it
describes the ranking of the same commit; when the helpers change shape it reports the error
in the row instead of failing the run.
"""

from __future__ import annotations

import sqlite3
import sys
from collections import Counter, defaultdict
from pathlib import Path

from indexer import history, ranking
from indexer import weights as W
from indexer.files import is_example_path, is_test_path
from indexer.tokens import fts_match, query_terms, query_words, rarest_within, stem


def _file_rank(ids: list[int], meta: dict[int, tuple], relevant: frozenset[str]) -> int | None:
    seen: dict[str, None] = {}
    for block_id in ids:
        path = meta[block_id][0]
        if path not in seen:
            seen[path] = None
            if path in relevant:
                return len(seen)
    return None


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
    terms = query_terms(query)
    df: dict[str, int] = {}
    lexical = ranking._lexical(conn, terms, k, df)
    selected, _ = rarest_within(terms, df, W.MATCH_DOC_BUDGET)
    words = {w.lower() for w in query_words(query)}
    named = words | ranking.joined_words(query)
    meta = ranking._meta(conn, lexical)
    seeds = ranking._seeds(conn, lexical, words)
    graph = ranking._pagerank(conn, seeds, meta)[: W.GRAPH_CANDIDATES]
    meta.update(ranking._meta(conn, [i for i in graph if i not in meta]))
    fused: dict[int, float] = defaultdict(float)
    for rank, block_id in enumerate(lexical):
        fused[block_id] += W.LEXICAL_WEIGHT / (W.FUSION_K + rank + 1)
    for rank, block_id in enumerate(graph):
        fused[block_id] += W.GRAPH_WEIGHT / (W.FUSION_K + rank + 1)
    ordered = sorted(fused, key=lambda i: (-fused[i], i))[: max(W.PRIOR_TOP, 4 * k)]
    fused_rank = _file_rank(ordered, meta, relevant)
    vendored = ranking._Vendored(conn)
    for block_id in ordered:
        path, kind, name = meta[block_id][:3]
        fused[block_id] *= ranking._prior(path, kind, name, named, set(terms), vendored(path))
    ordered.sort(key=lambda i: (-fused[i], i))
    prior_rank = _file_rank(ordered, meta, relevant)
    top_file = meta[ordered[0]][0] if ordered else None
    skipped = bool(ordered) and ranking._names_a_definition(ordered, meta, set(terms))
    files = {meta[i][0] for i in ordered}
    evidence = history.file_scores(conn, terms, files | set(relevant))
    recent = history.recent_activity(conn, files | set(relevant))
    if ordered and not skipped:
        ranking._add_history(conn, terms, ordered, meta, fused)
    final_rank = _file_rank(ordered, meta, relevant)
    winner = meta[ordered[0]][0] if ordered else None
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
        "lexical_rank": _file_rank(lexical, meta, relevant),
        "graph_rank": _file_rank(graph, meta, relevant),
        "fused_rank": fused_rank,
        "prior_rank": prior_rank,
        "final_rank": final_rank,
        "history_skipped": skipped,
        "top_before_history": top_file,
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
    import json

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
