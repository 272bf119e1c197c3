"""Pool saved retrieval runs: the per-set rows of several ``python -m bench.retrieval --json
--per-query history ...`` outputs, and one pooled row per method over all their queries (each
query once, with the same bootstrap interval as a single multi-repo run).

    python -m bench.retrieval_pool RUN.json [RUN.json ...] [--json]

Large repositories take tens of minutes each, so they are run as separate processes (in
parallel, or on another day with the same code); pooling their per-query ranks afterwards gives
exactly the figures one run over all of them would print.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.retrieval_report import Result, pooled, table, to_json  # noqa: E402


def load(path: Path) -> list[Result]:
    """The per-set rows of a saved run (its own pooled rows are dropped and recomputed)."""
    rows = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for row in rows:
        if "(pooled:" in row["dataset"]:
            continue
        if "per_query" not in row:
            raise ValueError(f"{path}: saved without --per-query, nothing to pool")
        out.append(
            Result(
                row["dataset"],
                row["method"],
                row["queries"],
                row["file"],
                row.get("block"),
                row["index_seconds"],
                row["search_ms"],
                row["per_query"],
                {k: tuple(v) for k, v in row.get("file_ci", {}).items()},
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.retrieval_pool", description=__doc__)
    parser.add_argument("runs", type=Path, nargs="+", help="outputs of --json --per-query")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    results: list[Result] = []
    for path in args.runs:
        try:
            results += load(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"error: cannot pool {path}: {exc}", file=sys.stderr)
            return 2
    pairs = [(r.dataset, r.method) for r in results]
    twice = sorted({p for p in pairs if pairs.count(p) > 1})
    if twice:
        print(f"error: {twice[0][0]} ({twice[0][1]}) appears twice", file=sys.stderr)
        return 2
    results += pooled(results)
    print(to_json(results, per_query=False) if args.json else table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
