"""The PageRank walk gives exactly the ranks of the plain loop it replaced (the loop below, as
it stood in ``ranking._pagerank``): the same additions in the same order, on random graphs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from indexer import weights as W
from indexer.pagerank import walk


def plain(restart: list[float], out_edges: list[list[int]]) -> list[int]:
    rank = list(restart)
    damping = W.PAGERANK_DAMPING
    for _ in range(W.PAGERANK_ITERATIONS):
        nxt = [(1 - damping) * r for r in restart]
        dangling = 0.0
        for i, outs in enumerate(out_edges):
            if outs:
                share = damping * rank[i] / len(outs)
                for j in outs:
                    nxt[j] += share
            else:
                dangling += damping * rank[i]
        if dangling:
            for i, r in enumerate(restart):
                nxt[i] += dangling * r
        rank = nxt
    return sorted(range(len(rank)), key=lambda i: (-rank[i], i))


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[float], list[list[int]]]:
    n = draw(st.integers(1, 40))
    weights = draw(
        st.lists(st.sampled_from([0.0, 0.0, 1.0, 0.5, 1 / 3, 3.0]), min_size=n, max_size=n)
    )
    if not any(weights):
        weights[0] = 1.0
    total = sum(weights)
    out_edges = [draw(st.lists(st.integers(0, n - 1), max_size=6, unique=True)) for _ in range(n)]
    return [w / total for w in weights], out_edges


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_walk_ranks_as_the_plain_loop(graph: tuple[list[float], list[list[int]]]) -> None:
    restart, out_edges = graph
    assert walk(restart, out_edges) == plain(restart, out_edges)


def test_a_node_pointed_at_by_the_seed_ranks_next() -> None:
    assert walk([1.0, 0.0, 0.0], [[1], [], []]) == [0, 1, 2]
