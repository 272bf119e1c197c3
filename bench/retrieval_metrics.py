"""The retrieval benchmark's arithmetic: hits collapsed to files, first-relevant ranks, R@k,
MRR and a bootstrap interval. Kept apart from the runs so the numbers can be checked by hand."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bench.datasets import Hit, Query, Target

KS = (1, 5, 10)


def file_ranking(hits: Iterable[Hit]) -> list[str]:
    """Unique paths in the order their best hit appears."""
    seen: dict[str, None] = {}
    for hit in hits:
        seen.setdefault(hit.path, None)
    return list(seen)


def first_rank(ranked: Sequence[bool]) -> int | None:
    """1-based position of the first relevant entry, or None."""
    return next((i + 1 for i, ok in enumerate(ranked) if ok), None)


def block_matches(hit: Hit, targets: Sequence[Target]) -> bool:
    return any(
        hit.path == t.path
        and hit.start_line <= t.line <= hit.end_line
        and hit.end_line <= t.end
        and hit.start_line >= t.start
        for t in targets
    )


@dataclass
class Scores:
    """Per-query first-relevant ranks; aggregates are computed from them."""

    file_ranks: list[int | None] = field(default_factory=list)
    block_ranks: list[int | None] | None = None

    def add(self, query: Query, hits: Sequence[Hit], *, whole_file: bool) -> None:
        files = file_ranking(hits)
        self.file_ranks.append(first_rank([f in query.files for f in files]))
        if query.targets and not whole_file:
            if self.block_ranks is None:
                self.block_ranks = []
            self.block_ranks.append(first_rank([block_matches(h, query.targets) for h in hits]))


def recall_at(ranks: Sequence[int | None], k: int) -> float:
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks) if ranks else 0.0


def mrr(ranks: Sequence[int | None], cutoff: int = 10) -> float:
    return sum(1 / r for r in ranks if r is not None and r <= cutoff) / len(ranks) if ranks else 0.0


def summarize(ranks: Sequence[int | None]) -> dict[str, float]:
    out = {f"R@{k}": round(recall_at(ranks, k), 4) for k in KS}
    out["MRR"] = round(mrr(ranks), 4)
    return out


def bootstrap_ci(
    ranks: Sequence[int | None], k: int, *, rounds: int = 2000, seed: int = 7
) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of R@k: how far the figure could move with another
    sample of queries of the same kind (with 150 queries, about +-0.08 around 0.55)."""
    if not ranks:
        return (0.0, 0.0)
    hits = [1 if r is not None and r <= k else 0 for r in ranks]
    rng = random.Random(seed)
    n = len(hits)
    means = sorted(sum(rng.choices(hits, k=n)) / n for _ in range(rounds))
    return (round(means[int(0.025 * rounds)], 3), round(means[int(0.975 * rounds) - 1], 3))
