"""Why a history query missed: each miss's query, fixed files and where they ranked, and the
top files with the evidence of their best block, step by step (the block search's rank, the
graph's, the file list's, the named folder's, each prior's multiplier, the history and recency
shares).

    python -m bench.retrieval_why --data /tmp/fl/replay --set ripgrep [--set ...] [--qid PREFIX]
    python -m bench.retrieval_why --snapshot DB --hits HITS.jsonl [--min-rank 10]

The first form reads ``retrieval_replay save``'s snapshots (every query whose fixed file is
not first); the second, one index with the queries of a ``retrieval.py --hits`` file, history
and recency off (that snapshot's history holds the fixes), misses past ``--min-rank``.

The steps are ``indexer.ranking.search``'s, taken one at a time with the same helpers; each
query's files are checked to be the ones ``search`` returns, so a ranking change this copy
does not follow stops the script instead of explaining another ranking. Prints, asserts
nothing else.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import defaultdict
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.retrieval import DEPTH  # noqa: E402
from bench.retrieval_metrics import first_rank  # noqa: E402
from bench.retrieval_replay import bring_up  # noqa: E402
from indexer import filelist, history_votes, scope_history, scoped  # noqa: E402
from indexer import ranking as R  # noqa: E402
from indexer import weights as W  # noqa: E402
from indexer.file_evidence import raise_by_next_blocks  # noqa: E402
from indexer.priors import (  # noqa: E402
    Forms,
    Vendored,
    file_stem,
    generated_files,
    joined_words,
    named_files,
    names_a_definition,
    place_penalty,
    prior,
    short_names,
)
from indexer.structure import (  # noqa: E402
    code_query,
    folder_holds,
    scope_match,
    scope_parts,
    scope_words,
)
from indexer.subjects import add_test_subjects  # noqa: E402
from indexer.tokens import bounded_query, query_terms, query_words  # noqa: E402
from indexer.verbatim import verbatim_blocks  # noqa: E402

LISTS = (("lex", "LEXICAL_WEIGHT"), ("graph", "GRAPH_WEIGHT"), ("flist", "FILE_LIST_WEIGHT"))


def explain(conn: sqlite3.Connection, text: str, k: int) -> tuple:
    """``ranking.search`` step by step: (chosen block ids, block rows, evidence per block,
    final scores, terms, term counts)."""
    why: dict[int, dict] = defaultdict(dict)
    query = bounded_query(text)
    all_terms = query_terms(query)
    query = code_query(query)
    terms = query_terms(query) or all_terms
    df: dict[str, int] = {}
    lexical = R._lexical(conn, terms, k, df, None)  # noqa: SLF001 (the search's own steps)
    words = {w.lower() for w in query_words(query)}
    term_set = set(terms)
    joined = joined_words(query)
    meta: dict[int, tuple] = {}
    seeds = R._seeds(conn, lexical, words, None)  # noqa: SLF001
    graph_rank = R.graph_rank(conn, seeds, meta, None)[: W.GRAPH_CANDIDATES]
    listed = filelist.candidates(conn, terms, lexical, df, None)
    scope, parts = scope_words(query), scope_parts(query)
    in_scope = scoped.candidates(conn, terms, parts, lexical[:50] + listed, lexical, df)
    packages = scope_history.package_shares(conn, query, None) if scope else {}
    fused: dict[int, float] = defaultdict(float)
    found_by = (lexical, graph_rank, listed)
    lists = [(n, got, getattr(W, w)) for (n, w), got in zip(LISTS, found_by, strict=True)]
    for name, found, weight in [*lists, ("scoped", in_scope, W.SCOPE_FILE_WEIGHT)]:
        for rank, block_id in enumerate(found):
            fused[block_id] += weight / (W.FUSION_K + rank + 1)
            why[block_id][name] = rank
    ordered = sorted(fused, key=lambda i: (-fused[i], i))[: max(W.PRIOR_TOP, 4 * k)]
    meta.update(R._meta(conn, [i for i in ordered if i not in meta]))  # noqa: SLF001
    vendored = Vendored(conn)
    file_names = named_files(query) if W.NAMED_FILE_WEIGHT > 0 else frozenset()
    generated = generated_files(conn, sorted({meta[i][0] for i in ordered}))
    stemmed = len(words) > 1
    name_words, name_terms = Forms(words, joined, stemmed), Forms(term_set, (), stemmed)
    for block_id in ordered:
        path, kind, name = meta[block_id][:3]
        factor = prior(kind, name, name_words, name_terms, place_penalty(path), vendored(path))
        why[block_id]["prior"] = factor
        if scope and scope_match(scope, path):
            factor *= 1.0 + W.SCOPE_WEIGHT
            why[block_id]["scope"] = 1
        if len(parts) > 1 and folder_holds(parts, path):
            factor *= 1.0 + W.SCOPE_FOLDER_WEIGHT
            why[block_id]["folder"] = 1
        if file_names and file_stem(path) in file_names:
            factor *= 1.0 + W.NAMED_FILE_WEIGHT
            why[block_id]["named"] = 1
        if path in generated and W.GENERATED_PENALTY != 1.0:
            factor *= W.GENERATED_PENALTY
            why[block_id]["generated"] = 1
        if packages:
            share = packages.get(scope_history.package_of(path), 0.0)
            factor *= 1.0 + W.SCOPE_HISTORY_WEIGHT * share
            if share:
                why[block_id]["scope_history"] = round(share, 2)
        fused[block_id] *= factor
    if W.VERBATIM_WEIGHT != 1.0:
        for block_id in verbatim_blocks(conn, query_words(query)) & fused.keys():
            fused[block_id] *= W.VERBATIM_WEIGHT
            why[block_id]["verbatim"] = 1
    ordered.sort(key=lambda i: (-fused[i], i))
    if ordered and not names_a_definition(ordered, meta, term_set):
        before = set(fused)
        if W.TEST_SUBJECT_WEIGHT > 0:
            add_test_subjects(conn, ordered, meta, fused, words, short_names, R._meta)  # noqa: SLF001
        for block_id in fused.keys() - before:
            why[block_id]["test_subject"] = 1
        files = {meta[i][0] for i in ordered}
        votes = history_votes.file_scores(conn, all_terms, files) if W.HISTORY_WEIGHT > 0 else {}
        recent = history_votes.recent_activity(conn, files) if W.RECENCY_WEIGHT > 0 else {}
        if votes or recent:
            best = fused[ordered[0]]
            for block_id in ordered:
                path = meta[block_id][0]
                share, busy = votes.get(path, 0.0), recent.get(path, 0.0)
                why[block_id].update(norm=fused[block_id] / best, hist=share, rec=busy)
                fused[block_id] = (
                    fused[block_id] / best + W.HISTORY_WEIGHT * share + W.RECENCY_WEIGHT * busy
                )
            ordered.sort(key=lambda i: (-fused[i], i))
    if W.FILE_NEXT_BLOCKS_WEIGHT > 0 and stemmed:
        raise_by_next_blocks(ordered, meta, fused)
    chosen = R._group(ordered, meta, k)  # noqa: SLF001
    return chosen, meta, why, fused, terms, df


def evidence(why: dict) -> str:
    out = [f"{key}#{why[key]}" for key in ("lex", "graph", "flist", "scoped") if key in why]
    if abs(why.get("prior", 1.0) - 1.0) > 1e-9:
        out.append(f"prior×{why['prior']:.2f}")
    flags = ("scope", "folder", "named", "generated", "scope_history", "verbatim", "test_subject")
    out += [f"{key}={why[key]}" for key in flags if key in why]
    if "norm" in why:
        out.append(f"norm={why['norm']:.2f} hist={why['hist']:.2f} rec={why['rec']:.2f}")
    return " ".join(out)


def report(conn: sqlite3.Connection, text: str, relevant: set[str], label: str, worse: int) -> None:
    """Print one query's miss (nothing when its fixed file ranks ``worse`` or better)."""
    chosen, meta, why, fused, terms, df = explain(conn, text, DEPTH)
    if [meta[b][0] for b in chosen] != [h.path for h in R.search(conn, text, DEPTH)]:
        raise SystemExit(f"error: {label}: this copy of the search no longer matches ranking.py")
    files = list(dict.fromkeys(meta[b][0] for b in chosen))
    rank = first_rank([f in relevant for f in files])
    if rank is not None and rank <= worse:
        return
    best: dict[str, int] = {}
    for block_id in chosen:
        best.setdefault(meta[block_id][0], block_id)
    print(f"== {label} rank={rank}  {text}")
    print(f"   fixed: {sorted(relevant)}")
    print("   terms (blocks holding each): " + " ".join(f"{t}:{df.get(t)}" for t in terms))
    for n, path in enumerate(files[:5], 1):
        b = best[path]
        star = "*" if path in relevant else " "
        row = f"[{meta[b][1]} {meta[b][2][:40]}] final={fused[b]:.3f} {evidence(why[b])}"
        print(f"   {n:>2} {star} {path}  {row}")
    for path in sorted(relevant):
        blocks = [b for b in why if b in meta and meta[b][0] == path]
        if not blocks:
            print(f"   fixed {path}: no candidate block")
            continue
        b = max(blocks, key=lambda i: fused.get(i, 0.0))
        at = files.index(path) + 1 if path in files else None
        print(f"   fixed {path} @{at} [{meta[b][1]} {meta[b][2][:40]}] {evidence(why[b])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.retrieval_why")
    parser.add_argument("--data", type=Path, help="retrieval_replay save's folder")
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--qid", default="", help="only queries whose id starts so")
    parser.add_argument("--snapshot", type=Path, help="one index.db (history off)")
    parser.add_argument("--hits", type=Path, help="retrieval.py --hits file: the queries")
    parser.add_argument("--min-rank", type=int, default=1, help="show misses past this rank")
    args = parser.parse_args(argv)
    if args.snapshot:
        if not args.hits or not args.snapshot.is_file():
            print("error: --snapshot needs an index file and --hits", file=sys.stderr)
            return 2
        W.HISTORY_WEIGHT = W.RECENCY_WEIGHT = 0.0
        bring_up(args.snapshot)
        queries: dict[str, tuple[str, set[str]]] = {}
        for line in args.hits.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            queries.setdefault(row["qid"], (row["query"], set(row["relevant"])))
        conn = sqlite3.connect(f"file:{args.snapshot}?mode=ro", uri=True)
        for qid, (text, relevant) in queries.items():
            if qid.startswith(args.qid):
                report(conn, text, relevant, qid, args.min_rank)
        conn.close()
        return 0
    if not args.data or not args.set:
        print("error: give --data and --set, or --snapshot and --hits", file=sys.stderr)
        return 2
    for name in args.set:
        listing = args.data / name / "queries.json"
        if not listing.is_file():
            print(f"error: no saved set {name} in {args.data}", file=sys.stderr)
            return 2
        for q in json.loads(listing.read_text(encoding="utf-8")):
            db = args.data / name / f"{q['qid']}.db"
            if not q["qid"].startswith(args.qid) or not db.exists():
                continue
            bring_up(db)
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            report(conn, q["text"], set(q["files"]), f"{name} {q['qid']}", args.min_rank)
            conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
