"""Search: BM25 over FTS5 fused with a personalised PageRank over the symbol graph.

Lexical search finds blocks that *say* the query's words; the graph adds blocks that are
*connected* to them (the definition a hit calls, the callers of a named function). The walk
runs on a small neighbourhood of the query (seeds plus one hop), so it costs milliseconds
regardless of repository size. Every number used here comes from ``weights``.
"""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict
from dataclasses import dataclass

from indexer import weights as W
from indexer.files import is_example_path, is_test_path, is_vendored_path
from indexer.store import FTS_COLUMNS
from indexer.tokens import fts_match, query_terms, query_words, split_identifier

_NAME_SPLIT = re.compile(r"::|\.|, ")


@dataclass
class Hit:
    path: str
    start_line: int
    end_line: int
    kind: str
    name: str
    score: float
    text: str = ""
    language: str = ""
    signature: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "kind": self.kind,
            "name": self.name,
            "score": round(self.score, 6),
        }


def short_names(qualified: str) -> set[str]:
    """Names a block defines, from its (possibly merged) qualified name, lower-cased."""
    parts = [p.strip() for p in qualified.split(", ")]
    return {_NAME_SPLIT.split(p)[-1].lower() for p in parts if p}


def search(conn: sqlite3.Connection, query: str, k: int) -> list[Hit]:
    terms = query_terms(query)
    if not terms or k <= 0:
        return []
    weights = ", ".join(str(W.COLUMN_WEIGHTS[c]) for c in FTS_COLUMNS)
    lexical = [
        row[0]
        for row in conn.execute(
            f"SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH ? ORDER BY bm25(blocks_fts, {weights}) LIMIT ?",
            (fts_match(terms), W.LEXICAL_CANDIDATES),
        )
    ]
    words = {w.lower() for w in query_words(query)}
    term_set = set(terms)
    meta = _meta(conn, lexical)
    seeds = _seeds(conn, lexical, words)
    graph_rank = _pagerank(conn, seeds, meta)[: W.LEXICAL_CANDIDATES]
    missing = [i for i in graph_rank if i not in meta]
    meta.update(_meta(conn, missing))

    fused: dict[int, float] = defaultdict(float)
    for rank, block_id in enumerate(lexical):
        fused[block_id] += W.LEXICAL_WEIGHT / (W.FUSION_K + rank + 1)
    for rank, block_id in enumerate(graph_rank):
        fused[block_id] += W.GRAPH_WEIGHT / (W.FUSION_K + rank + 1)
    for block_id in fused:
        path, kind, name = meta[block_id][:3]
        fused[block_id] *= _prior(path, kind, name, words, term_set)
    ordered = sorted(fused, key=lambda i: (-fused[i], i))
    chosen = _group(ordered, meta, k)
    texts = _texts(conn, chosen)
    hits = []
    for block_id in chosen:
        path, kind, name, start, end, _refs = meta[block_id]
        text, language, signature = texts[block_id]
        hits.append(Hit(path, start, end, kind, name, fused[block_id], text, language, signature))
    return hits


def _meta(conn: sqlite3.Connection, ids: list[int]) -> dict[int, tuple]:
    out: dict[int, tuple] = {}
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            f"SELECT id, path, kind, name, start_line, end_line, refs FROM blocks WHERE id IN ({marks})",
            chunk,
        ):
            out[row[0]] = row[1:]
    return out


def _texts(conn: sqlite3.Connection, ids: list[int]) -> dict[int, tuple[str, str, str]]:
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT id, text, language, signature FROM blocks WHERE id IN ({marks})", ids
    )
    return {row[0]: row[1:] for row in rows}


def _seeds(conn: sqlite3.Connection, lexical: list[int], words: set[str]) -> dict[int, float]:
    """Where the walk restarts: top lexical hits, definitions of named identifiers, named files."""
    seeds: dict[int, float] = defaultdict(float)
    top = lexical[: W.SEED_TOP_LEXICAL]
    for rank, block_id in enumerate(top):
        seeds[block_id] += 1.0 / (rank + 1)
    if words:
        by_name = _lookup(conn, "defs", words)
        for ids in by_name.values():
            for block_id in ids:
                seeds[block_id] += W.SEED_NAME_WEIGHT / len(ids)
        long_words = [w for w in words if len(w) >= 3]
        if long_words:
            clauses = " OR ".join("path LIKE ?" for _ in long_words)
            files = conn.execute(
                f"SELECT id FROM files WHERE {clauses} LIMIT 20", [f"%{w}%" for w in long_words]
            ).fetchall()
            for (file_id,) in files:
                blocks = conn.execute(
                    "SELECT id FROM blocks WHERE file_id = ? LIMIT 50", (file_id,)
                ).fetchall()
                for (block_id,) in blocks:
                    seeds[block_id] += W.SEED_PATH_WEIGHT / max(len(blocks), 1) / max(len(files), 1)
    return seeds


def _lookup(conn: sqlite3.Connection, table: str, names: set[str]) -> dict[str, list[int]]:
    """name -> block ids in ``defs`` or ``refs``; names too common to mean anything are dropped."""
    out: dict[str, list[int]] = defaultdict(list)
    for chunk in _chunks(sorted(names)):
        marks = ",".join("?" * len(chunk))
        for name, block_id in conn.execute(
            f"SELECT name, block_id FROM {table} WHERE name IN ({marks})", chunk
        ):
            out[name].append(block_id)
    return {n: ids for n, ids in out.items() if len(ids) <= W.GRAPH_FANOUT_MAX}


def _pagerank(
    conn: sqlite3.Connection, seeds: dict[int, float], meta: dict[int, tuple]
) -> list[int]:
    """Personalised PageRank on the seeds' one-hop neighbourhood; node ids, best first."""
    if not seeds:
        return []
    seed_meta = dict(meta)
    seed_meta.update(_meta(conn, [i for i in seeds if i not in meta]))
    nodes = set(seeds)
    edges: set[tuple[int, int]] = set()
    # Outgoing: what the seeds reference -> where it is defined.
    ref_names: dict[str, list[int]] = defaultdict(list)
    for block_id in seeds:
        row = seed_meta.get(block_id)
        if row:
            for name in row[5].split():
                ref_names[name.lower()].append(block_id)
    for name, targets in _lookup(conn, "defs", set(ref_names)).items():
        for src in ref_names[name]:
            for dst in targets:
                edges.add((src, dst))
    # Incoming: who references what the seeds define.
    def_names: dict[str, list[int]] = defaultdict(list)
    for block_id in seeds:
        row = seed_meta.get(block_id)
        if row:
            for name in short_names(row[2]):
                def_names[name].append(block_id)
    for name, sources in _lookup(conn, "refs", set(def_names)).items():
        for dst in def_names[name]:
            for src in sources:
                edges.add((src, dst))
    edges = {(s, d) for s, d in edges if s != d}
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
    return [nodes_l[i] for i in sorted(range(len(nodes_l)), key=lambda i: (-rank[i], nodes_l[i]))]


def name_match(name: str, terms: set[str]) -> float:
    """How well a qualified name matches the query terms: coverage x precision, in [0, 1]."""
    parts = set(split_identifier(name.replace(".", "_").replace(",", "_").replace(":", "_")))
    common = len(parts & terms)
    return (common / len(terms)) * (common / len(parts)) if parts and terms else 0.0


def _prior(path: str, kind: str, name: str, words: set[str], terms: set[str]) -> float:
    factor = 1.0 + W.NAME_COVERAGE_WEIGHT * name_match(name, terms)
    if words & short_names(name):
        factor *= W.NAME_MATCH_BOOST
    if is_test_path(path):
        factor *= W.TEST_PENALTY
    elif is_example_path(path):
        factor *= W.EXAMPLE_PENALTY
    if is_vendored_path(path):
        factor *= W.VENDOR_PENALTY
    if kind == "text":
        factor *= W.TEXT_WINDOW_PENALTY
    return factor


def _group(ordered: list[int], meta: dict[int, tuple], k: int) -> list[int]:
    """Top k, at most GROUP_LIMIT per file before any file gets more."""
    per_file: dict[str, int] = defaultdict(int)
    chosen: list[int] = []
    overflow: list[int] = []
    for block_id in ordered:
        path = meta[block_id][0]
        if per_file[path] < W.GROUP_LIMIT:
            per_file[path] += 1
            chosen.append(block_id)
            if len(chosen) == k:
                return chosen
        else:
            overflow.append(block_id)
    return (chosen + overflow)[:k]


def _chunks(items: list, size: int = 500) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]
