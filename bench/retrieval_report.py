"""The retrieval bench's results: one row per method and set (``Result``), pooled rows over
several sets, and the two outputs (a table for people, JSON for ``retrieval_pool`` and
notes)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from bench.retrieval_metrics import bootstrap_ci, summarize


@dataclass
class Result:
    dataset: str
    method: str
    queries: int
    file: dict[str, float]
    block: dict[str, float] | None
    index_seconds: float
    search_ms: float
    per_query: dict[str, int | None] = field(default_factory=dict)
    file_ci: dict[str, tuple[float, float]] = field(default_factory=dict)


def pooled(results: list[Result]) -> list[Result]:
    """One row per method and kind of repository set (history, names) over the queries of all
    its sets together: each query counts once, so a larger set weighs more; per-query ranks are
    what is pooled, not averages."""
    out = []
    for kind in ("history", "names"):
        for method in dict.fromkeys(r.method for r in results):
            rows = [r for r in results if r.method == method and r.dataset.startswith(kind + "(")]
            if len(rows) < 2:
                continue
            ranks = [rank for r in rows for rank in r.per_query.values()]
            sets = "+".join(r.dataset[len(kind) + 1 :].split(",")[0] for r in rows)
            unit = "fixes" if kind == "history" else "queries"
            out.append(
                Result(
                    f"{kind}(pooled: {sets}, {len(ranks)} {unit})",
                    method,
                    len(ranks),
                    summarize(ranks),
                    None,
                    round(sum(r.index_seconds for r in rows), 3),
                    round(sum(r.search_ms * r.queries for r in rows) / max(len(ranks), 1), 2),
                    {f"{r.dataset}:{q}": rank for r in rows for q, rank in r.per_query.items()},
                    {f"R@{k}": bootstrap_ci(ranks, k) for k in (1, 5)},
                )
            )
    return out


def table(results: list[Result]) -> str:
    head = (
        "method",
        "queries",
        "R@1",
        "R@5",
        "R@10",
        "MRR",
        "blk R@1",
        "blk R@5",
        "blk R@10",
        "blk MRR",
        "index s",
        "ms/query",
        "R@1 95% CI",
        "R@5 95% CI",
    )
    lines = []
    for dataset in dict.fromkeys(r.dataset for r in results):
        lines.append(dataset)
        lines.append(
            "  " + " ".join(f"{h:>9}" for h in head[:-2]) + "".join(f"{h:>12}" for h in head[-2:])
        )
        for r in (r for r in results if r.dataset == dataset):
            blk = (
                [f"{r.block[c]:.3f}" for c in ("R@1", "R@5", "R@10", "MRR")]
                if r.block
                else ["-"] * 4
            )
            cells = [
                r.method,
                str(r.queries),
                *(f"{r.file[c]:.3f}" for c in ("R@1", "R@5", "R@10", "MRR")),
                *blk,
                f"{r.index_seconds:.2f}",
                f"{r.search_ms:.1f}",
                *(
                    f"{lo:.2f}-{hi:.2f}"
                    for lo, hi in (r.file_ci.get(c, (0, 0)) for c in ("R@1", "R@5"))
                ),
            ]
            lines.append(
                "  "
                + " ".join(f"{c:>9}" for c in cells[:-2])
                + "".join(f"{c:>12}" for c in cells[-2:])
            )
    return "\n".join(lines)


def to_json(results: list[Result], *, per_query: bool) -> str:
    rows = []
    for r in results:
        row = {k: v for k, v in r.__dict__.items() if k != "per_query"}
        if per_query:
            row["per_query"] = r.per_query
        rows.append(row)
    return json.dumps(rows, indent=2, sort_keys=True)
