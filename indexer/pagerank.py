"""The search's graph step: the graph of a query's seeds and their one-hop neighbourhood
(``graph_rank``: what the seeds reference, and what references them, by name through the
``defs`` and ``refs`` tables), ranked by personalised PageRank (``walk``)."""

from __future__ import annotations

import sqlite3
from collections import defaultdict

from indexer import weights as W
from indexer.priors import short_names
from indexer.search_cache import Symbols


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


def lookup(
    conn: sqlite3.Connection, table: str, names: set[str], symbols: Symbols | None = None
) -> dict[str, list[int]]:
    """name -> block ids in ``defs`` or ``refs``; names too common to mean anything are dropped.
    The lists may be ``symbols``' own: callers only read them."""
    out: dict[str, list[int]] = {}
    sql = f"SELECT block_id FROM {table} WHERE name = ? LIMIT {W.GRAPH_FANOUT_MAX + 1}"
    kept = symbols.ids if symbols is not None else None
    for name in sorted(names):
        ids = kept.get((table, name)) if kept is not None else None
        if ids is None:
            ids = [r[0] for r in conn.execute(sql, (name,))]
            if kept is not None:
                kept[(table, name)] = ids
        if 0 < len(ids) <= W.GRAPH_FANOUT_MAX:
            out[name] = ids
    return out


def graph_rank(
    conn: sqlite3.Connection,
    seeds: dict[int, float],
    meta: dict[int, tuple],
    symbols: Symbols | None = None,
) -> list[int]:
    """Personalised PageRank on the seeds' one-hop neighbourhood; node ids, best first. The
    rows of the seeds it expands are added to ``meta``."""
    if not seeds:
        return []
    expand = sorted(seeds, key=lambda i: (-seeds[i], i))[: W.GRAPH_EXPAND_SEEDS]
    marks = ",".join("?" * len(expand))
    refs: dict[int, str] = {}
    for block_id, *row, block_refs in conn.execute(  # the seeds' rows and refs in one read
        f"SELECT id, path, kind, name, start_line, end_line, refs FROM blocks WHERE id IN ({marks})",
        expand,
    ):
        meta.setdefault(block_id, tuple(row))
        refs[block_id] = block_refs
    nodes = set(seeds)
    edges: set[tuple[int, int]] = set()
    # Outgoing: what the seeds reference -> where it is defined.
    ref_names: dict[str, list[int]] = defaultdict(list)
    for block_id in expand:
        if block_id in refs:
            for name in refs[block_id].split():
                ref_names[name.lower()].append(block_id)
    for name, targets in lookup(conn, "defs", set(ref_names), symbols).items():
        for src in ref_names[name]:
            for dst in targets:
                edges.add((src, dst))
    # Incoming: who references what the seeds define.
    def_names: dict[str, list[int]] = defaultdict(list)
    for block_id in expand:
        row = meta.get(block_id)
        if row:
            for name in short_names(row[2]):
                def_names[name].append(block_id)
    for name, sources in lookup(conn, "refs", set(def_names), symbols).items():
        for dst in def_names[name]:
            for src in sources:
                edges.add((src, dst))
    edges = {(s, d) for s, d in edges if s != d}
    reached = nodes.union(*edges)
    if len(reached) <= W.GRAPH_MAX_NODES:  # the loop below would add every end
        nodes = reached
    else:
        for s, d in edges:
            nodes.add(s)
            nodes.add(d)
            if len(nodes) > W.GRAPH_MAX_NODES:
                break
    nodes_l = sorted(nodes)
    index = {n: i for i, n in enumerate(nodes_l)}
    out_edges: list[list[int]] = [[] for _ in nodes_l]
    for s, d in edges:
        if s in index and d in index:
            out_edges[index[s]].append(index[d])
    total = sum(seeds.values())
    restart = [seeds.get(n, 0.0) / total for n in nodes_l]
    return [nodes_l[i] for i in walk(restart, out_edges)]
