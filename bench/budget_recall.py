"""Recall within a reading budget: is the fixed file *in* what ``search_code`` shows the agent?

    python -m bench.budget_recall --repo PATH [--repo PATH ...] [--max-commits 150] [--json]

The history-mined sets of ``bench/retrieval.py`` (a fix's subject as the query, the index at
the fix's parent), but scored the way an agent reads: the text a search returns, cut at 2k,
4k and 8k tokens (4 characters a token), counts a fixed file when its path is shown there —
the retrieval measure SWE-bench-style localisation uses. Three renderings of the same 50 hits:

  * ``search_code`` before this view: 8 hits, each with its path and first 6 lines
  * that format with all 50 hits, cut at the budget
  * ``indexer.view.render``: grouped by file, outlines first, query-bearing lines after

Each row prints recall with its 95 % bootstrap interval; with several sets, a pooled row.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.datasets import DatasetError  # noqa: E402
from bench.retrieval_metrics import bootstrap_ci  # noqa: E402

BUDGETS = (2000, 4000, 8000)
CHARS_PER_TOKEN = 4
OLD_LIMIT = 8  # search_code's default number of hits before the grouped view


def old_format(hits: list) -> str:
    """search_code's output before the grouped view (agent/tools/search.py at 18ac1f4)."""
    lines = []
    for hit in hits:
        snippet = "\n".join(f"    {line}" for line in (hit.text or "").splitlines()[:6])
        lines.append(
            f"{hit.path}:{hit.start_line}-{hit.end_line} {hit.kind} {hit.name} "
            f"(score {hit.score:.3f})\n{snippet}"
        )
    return "\n".join(lines)


def shown_paths(text: str, budget_tokens: int, paths: set[str]) -> set[str]:
    """Paths whose heading line lies whole within the first ``budget_tokens`` of ``text``."""
    cut = text[: budget_tokens * CHARS_PER_TOKEN]
    if len(text) > len(cut):
        cut = cut[: cut.rfind("\n") + 1]
    found = set()
    for line in cut.split("\n"):
        if line and not line[0].isspace():
            head = line.split(":", 1)[0].split(" ", 1)[0]
            if head in paths:
                found.add(head)
    return found


def run_set(repo: Path, max_commits: int, work: Path) -> dict:
    from bench.datasets import history
    from indexer import Index
    from indexer.view import render

    qs = history.queries(history.mine(repo, max_commits=max_commits))
    snap = history.Snapshot(repo, work / "worktree")
    snap.goto(qs[0].snapshot)
    index = Index(snap.root)
    found: dict[str, list[int | None]] = {}
    tokens: dict[str, list[int]] = {}
    try:
        for q in qs:
            if q.snapshot != snap.commit:
                snap.goto(q.snapshot)
            index.update()
            hits = index.search(q.text, 50)
            paths = {h.path for h in hits}
            views = {
                "search_code, 8 hits": lambda b, hits=hits: old_format(hits[:OLD_LIMIT]),
                "same format, 50 hits": lambda b, hits=hits: old_format(hits),
                "grouped view": lambda b, hits=hits, q=q: render(hits, q.text, b),
            }
            for name, view in views.items():
                for budget in BUDGETS:
                    text = view(budget)
                    got = shown_paths(text, budget, paths) & q.files
                    found.setdefault(f"{name}@{budget}", []).append(1 if got else None)
                    used = min(len(text), budget * CHARS_PER_TOKEN) // CHARS_PER_TOKEN
                    tokens.setdefault(f"{name}@{budget}", []).append(used)
    finally:
        index.close()
    return {"set": repo.resolve().name, "queries": len(qs), "found": found, "tokens": tokens}


def table(rows: list[dict]) -> str:
    out = ["| set | view | " + " | ".join(f"{b // 1000}k tokens" for b in BUDGETS) + " |"]
    out.append("|---|---|" + "---|" * len(BUDGETS))
    if len(rows) > 1:
        pooled: dict = {"set": "pooled", "queries": 0, "found": {}, "tokens": {}}
        for r in rows:
            pooled["queries"] += r["queries"]
            for key, vals in r["found"].items():
                pooled["found"].setdefault(key, []).extend(vals)
            for key, vals in r["tokens"].items():
                pooled["tokens"].setdefault(key, []).extend(vals)
        rows = [*rows, pooled]
    for r in rows:
        for view in ("search_code, 8 hits", "same format, 50 hits", "grouped view"):
            cells = []
            for b in BUDGETS:
                vals = r["found"][f"{view}@{b}"]
                share = sum(1 for v in vals if v) / len(vals)
                lo, hi = bootstrap_ci(vals, 1)
                used = sum(r["tokens"][f"{view}@{b}"]) / len(vals)
                cells.append(f"{share:.3f} ({lo:.2f}–{hi:.2f}; {used:.0f} tok)")
            out.append(f"| {r['set']} ({r['queries']}) | {view} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--repo", type=Path, action="append", required=True)
    ap.add_argument("--max-commits", type=int, default=150)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="kiln-budget-") as tmp:
            for n, repo in enumerate(args.repo):
                rows.append(run_set(repo, args.max_commits, Path(tmp) / str(n)))
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(rows) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
