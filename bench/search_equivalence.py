"""Dump every hit and score of many searches, to check that a speed change to the search left
its results alone (compare the dumps of two checkouts: equal means the same hits, in the same
order, with the same scores bit for bit). Prints figures, asserts nothing.

    python bench/search_equivalence.py dump OUT.json [--replay DIR --set NAME ...]
                                       [--index DB --git REPO]
    python bench/search_equivalence.py compare A.json B.json

``--replay``: each saved set's first 60 queries on their own snapshots, then all of the set's
queries on its newest snapshot, one after the other with one cache (as an ``Index`` keeps it).
``--index``/``--git``: the newest 300 commit subjects of REPO, some plain words, and the first
50 subjects again, on one index database. Run ``dump`` from each checkout (this script imports
the ``indexer`` of the checkout it sits in); the cache is used when that checkout has one.
``compare`` pairs the searches in order and compares queries, hits and scores, not the
databases' paths: one checkout may search copies that its own migration steps have updated.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: this checkout

from indexer import ranking  # noqa: E402

WORDS = ["select", "typed", "kiln_typed_5_8530", "compile column", "session flush", "fix", "5"]


def jobs(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    out = []
    for name in args.set:
        folder = args.replay / name
        queries = json.loads((folder / "queries.json").read_text(encoding="utf-8"))
        out += [(str(folder / f"{q['qid']}.db"), [q["text"]]) for q in queries[:60]]
        out.append((str(folder / f"{queries[-1]['qid']}.db"), [q["text"] for q in queries]))
    if args.index:
        log = ["git", "-C", str(args.git), "log", "--no-merges", "--format=%s", "-300"]
        subjects = subprocess.run(log, capture_output=True, text=True, check=True).stdout
        lines = subjects.splitlines()
        out.append((str(args.index), lines + WORDS + lines[:50]))
    return out


def dump(args: argparse.Namespace) -> None:
    # a checkout from before the search cache kept its term counts in a plain dict
    new_cache = dict
    if importlib.util.find_spec("indexer.search_cache") is not None:
        new_cache = importlib.import_module("indexer.search_cache").SearchCache
    rows = []
    for db, queries in jobs(args):
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        cache = new_cache()
        # what a writer's searches keep (``Symbols``), where the checkout has it: kept across
        # these searches as an ``Index`` keeps it (nothing writes this read-only connection)
        symbols = getattr(cache, "symbols", None)
        for query in queries:
            if symbols is None:
                hits = ranking.search(conn, query, 50, cache)  # type: ignore[arg-type]
            else:
                hits = ranking.search(conn, query, 50, cache, symbols)
            rows.append([db, query, [[h.path, h.start_line, h.name, repr(h.score)] for h in hits]])
        conn.close()
    args.out.write_text(json.dumps(rows), encoding="utf-8")
    print(f"{len(rows)} searches dumped to {args.out}")


def compare(a: Path, b: Path) -> int:
    left = json.loads(a.read_text(encoding="utf-8"))
    right = json.loads(b.read_text(encoding="utf-8"))
    if len(left) != len(right):
        print(f"different searches: {len(left)} against {len(right)}")
        return 1
    # the same searches in the same order; the databases may be copies elsewhere (migrated)
    differ = [x for x, y in zip(left, right, strict=True) if x[1:] != y[1:]]
    print(f"{len(left)} searches, {len(differ)} with different hits or scores")
    for db, query, _ in differ[:10]:
        print(f"  {Path(db).parent.name}/{Path(db).name}: {query[:80]}")
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--replay", type=Path, default=Path("/tmp/replay"))
    d.add_argument("--set", action="append", default=[])
    d.add_argument("--index", type=Path, default=None)
    d.add_argument("--git", type=Path, default=None)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "compare":
        return compare(args.a, args.b)
    if args.index and not args.git:
        ap.error("--index needs --git (the repository whose commit subjects are the queries)")
    dump(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
