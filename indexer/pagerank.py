"""The personalised PageRank iteration of the search's graph step (``ranking._pagerank``
builds the graph: a query's seeds and their one-hop neighbourhood)."""

from __future__ import annotations

from indexer import weights as W


def walk(restart: list[float], out_edges: list[list[int]]) -> list[int]:
    """Node indices by rank (ties by index). The sums run in the same order as a plain loop
    over every node would (adding a zero changes no float), so ranks are the same bits."""
    damping = W.PAGERANK_DAMPING
    rank = list(restart)
    kept = [(1 - damping) * r for r in restart]
    active = [(i, outs, len(outs)) for i, outs in enumerate(out_edges) if outs]
    sinks = [i for i, outs in enumerate(out_edges) if not outs]
    seeded = [(i, r) for i, r in enumerate(restart) if r]
    for _ in range(W.PAGERANK_ITERATIONS):
        nxt = kept[:]
        for i, outs, n in active:
            share = damping * rank[i] / n
            for j in outs:
                nxt[j] += share
        dangling = 0.0
        for i in sinks:
            dangling += damping * rank[i]
        if dangling:
            for i, r in seeded:
                nxt[i] += dangling * r
        rank = nxt
    return sorted(range(len(rank)), key=lambda i: (-rank[i], i))
