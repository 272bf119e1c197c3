"""Search: BM25 over FTS5 fused with a personalised PageRank over the symbol graph.

Lexical search finds blocks that *say* the query's words; the graph adds blocks that are
*connected* to them (the definition a hit calls, the callers of a named function). The walk
runs on a small neighbourhood of the query (seeds plus one hop), so it costs milliseconds
regardless of repository size. Every number used here comes from ``weights``.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass

from indexer import filelist, history_votes, scope_history, scoped
from indexer import weights as W
from indexer.block_terms import BlockTerms
from indexer.file_evidence import raise_by_next_blocks
from indexer.pagerank import graph_rank, lookup
from indexer.priors import (
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
from indexer.rescore import rescore
from indexer.search_cache import HistoryMemo, SearchCache, Symbols
from indexer.store import FTS_COLUMNS
from indexer.structure import (
    code_query,
    folder_holds,
    scope_match,
    scope_parts,
    scope_words,
)
from indexer.subjects import add_test_subjects
from indexer.tokens import (
    bounded_query,
    fts_match,
    query_terms,
    query_words,
    rarest_within,
    vocabulary_term,
)
from indexer.verbatim import verbatim_blocks


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


def search(
    conn: sqlite3.Connection,
    query: str,
    k: int,
    cache: SearchCache | None = None,
    symbols: Symbols | None = None,
) -> list[Hit]:
    """Top ``k`` blocks for ``query``. ``cache`` keeps what later searches of the same index can
    reuse (see ``search_cache``); without it every count is read afresh. ``symbols``: symbol
    lookups kept for ``conn`` (the index's writer; checked here, see ``Symbols``)."""
    query = bounded_query(query)
    all_terms = query_terms(query)
    if not all_terms or k <= 0:
        return []
    query = code_query(query)  # what the code is searched with: no ticket keys (see there)
    terms = query_terms(query) or all_terms
    df = {} if cache is None else cache.counts(conn)
    kept = None
    if symbols is not None:
        symbols.check(conn)
        kept = symbols.blocks  # the re-ranking's blocks (see ``block_terms``)
    lexical = _lexical(conn, terms, k, df, kept)
    words = {w.lower() for w in query_words(query)}
    term_set = set(terms)
    joined = joined_words(query)
    meta: dict[int, tuple] = {}  # block rows, read for the candidates judged below only
    seeds = _seeds(conn, lexical, words, symbols)
    graph_ranked = graph_rank(conn, seeds, meta, symbols)[: W.GRAPH_CANDIDATES]
    listed = filelist.candidates(conn, terms, lexical, df, symbols)
    scope = scope_words(query)
    parts = scope_parts(query)  # a component named in words: its folder (see ``scoped``)
    in_scope = scoped.candidates(conn, terms, parts, lexical[:50] + listed, lexical, df)
    memo = cache.history(conn) if cache is not None else None
    packages = scope_history.package_shares(conn, query, memo) if scope else {}

    fused: dict[int, float] = defaultdict(float)
    for rank, block_id in enumerate(lexical):
        fused[block_id] += W.LEXICAL_WEIGHT / (W.FUSION_K + rank + 1)
    for rank, block_id in enumerate(graph_ranked):
        fused[block_id] += W.GRAPH_WEIGHT / (W.FUSION_K + rank + 1)
    for rank, block_id in enumerate(listed):
        fused[block_id] += W.FILE_LIST_WEIGHT / (W.FUSION_K + rank + 1)
    for rank, block_id in enumerate(in_scope):
        fused[block_id] += W.SCOPE_FILE_WEIGHT / (W.FUSION_K + rank + 1)
    ordered = sorted(fused, key=lambda i: (-fused[i], i))[: max(W.PRIOR_TOP, 4 * k)]
    meta.update(_meta(conn, [i for i in ordered if i not in meta]))
    vendored = Vendored(conn)
    file_names = named_files(query) if W.NAMED_FILE_WEIGHT > 0 else frozenset()
    places: dict[str, tuple[float, bool]] = {}  # candidates share files: judge each once
    generated = (
        generated_files(conn, sorted({meta[i][0] for i in ordered}))
        if W.GENERATED_PENALTY != 1.0
        else set()
    )
    # see ``priors.Forms``; a query of one word looks a name up as written (an edit's search)
    stemmed = len(words) > 1
    name_words, name_terms = Forms(words, joined, stemmed), Forms(term_set, (), stemmed)
    for block_id in ordered:
        path, kind, name = meta[block_id][:3]
        if path not in places:
            places[path] = (place_penalty(path), vendored(path))
        fused[block_id] *= prior(kind, name, name_words, name_terms, *places[path])
        if scope:
            fused[block_id] *= 1.0 + W.SCOPE_WEIGHT * scope_match(scope, path)
        if len(parts) > 1 and folder_holds(parts, path):
            fused[block_id] *= 1.0 + W.SCOPE_FOLDER_WEIGHT
        if file_names and file_stem(path) in file_names:
            fused[block_id] *= 1.0 + W.NAMED_FILE_WEIGHT
        if path in generated:
            fused[block_id] *= W.GENERATED_PENALTY
        if packages:
            share = packages.get(scope_history.package_of(path), 0.0)
            fused[block_id] *= 1.0 + W.SCOPE_HISTORY_WEIGHT * share
    if W.VERBATIM_WEIGHT != 1.0:
        for block_id in verbatim_blocks(conn, query_words(query)) & fused.keys():
            fused[block_id] *= W.VERBATIM_WEIGHT
    ordered.sort(key=lambda i: (-fused[i], i))
    if ordered and not names_a_definition(ordered, meta, term_set):
        if W.TEST_SUBJECT_WEIGHT > 0:
            add_test_subjects(conn, ordered, meta, fused, words, short_names, _meta)
        _add_history(conn, all_terms, ordered, meta, fused, memo, symbols)
    if W.FILE_NEXT_BLOCKS_WEIGHT > 0 and stemmed:  # not for one word: an editor's name search
        raise_by_next_blocks(ordered, meta, fused)
    chosen = _group(ordered, meta, k)
    texts = _texts(conn, chosen)
    hits = []
    for block_id in chosen:
        path, kind, name, start, end = meta[block_id]
        text, language, signature = texts[block_id]
        hits.append(Hit(path, start, end, kind, name, fused[block_id], text, language, signature))
    return hits


def _lexical(
    conn: sqlite3.Connection,
    terms: list[str],
    k: int,
    df_cache: dict[str, int],
    kept: BlockTerms | None = None,
) -> list[int]:
    """BM25 candidates within a bounded amount of work.

    Scoring a match costs far more than finding it, so terms are taken rarest first until the
    blocks they match would exceed ``MATCH_DOC_BUDGET``; BM25 gives the dropped, common terms
    little weight anyway. When some terms were dropped, blocks containing *all* terms (a cheap
    intersection) come first. A lone very common term is scored on a bounded scan. The blocks
    found are then put in BM25 order over every term (``rescore``, ``RESCORE_ALL_TERMS``).
    """
    for term in terms:
        if term not in df_cache:
            token = vocabulary_term(term)
            row = None
            if token is not None:
                row = conn.execute(
                    "SELECT doc FROM blocks_vocab WHERE term = ?", (token,)
                ).fetchone()
            df_cache[term] = row[0] if row else 0  # phrases count as rare: they are selective
    selected, used = rarest_within(terms, df_cache, W.MATCH_DOC_BUDGET)
    weights = ", ".join(str(W.COLUMN_WEIGHTS[c]) for c in FTS_COLUMNS)
    ranked = f"SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH ? ORDER BY bm25(blocks_fts, {weights}) LIMIT ?"
    found: dict[int, None] = {}
    if len(selected) < len(terms):
        every = fts_match(terms, "AND")
        # bm25() first counts the rows of each term, the common ones too (a scan of ~10,000
        # entries for "type" on SQLAlchemy, the most of a search's cost right after an edit);
        # finding the rows holding every term seeks instead. One row needs no order.
        few = conn.execute(
            "SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH ? LIMIT 2", (every,)
        ).fetchall()
        rows = few if len(few) < 2 else conn.execute(ranked, (every, W.LEXICAL_CANDIDATES))
        for (rowid,) in rows:
            found[rowid] = None
    if used <= W.MATCH_DOC_BUDGET:
        rows = conn.execute(ranked, (fts_match(selected), W.LEXICAL_CANDIDATES)).fetchall()
    else:
        scan = f"SELECT rowid, bm25(blocks_fts, {weights}) FROM blocks_fts WHERE blocks_fts MATCH ? LIMIT ?"
        scored = conn.execute(scan, (fts_match(selected), W.MATCH_DOC_BUDGET)).fetchall()
        rows = sorted(scored, key=lambda r: r[1])[: W.LEXICAL_CANDIDATES]
    for row in rows:
        found.setdefault(row[0], None)
    if W.RESCORE_ALL_TERMS and len(selected) < len(terms):  # see ``rescore``
        return rescore(conn, list(found), terms, df_cache, kept)[: W.LEXICAL_CANDIDATES]
    return list(found)[: W.LEXICAL_CANDIDATES]


def _meta(conn: sqlite3.Connection, ids: list[int]) -> dict[int, tuple]:
    out: dict[int, tuple] = {}
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            f"SELECT id, path, kind, name, start_line, end_line FROM blocks WHERE id IN ({marks})",
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


def _seeds(
    conn: sqlite3.Connection, lexical: list[int], words: set[str], symbols: Symbols | None = None
) -> dict[int, float]:
    """Where the walk restarts: top lexical hits, definitions of named identifiers, named files."""
    seeds: dict[int, float] = defaultdict(float)
    top = lexical[: W.SEED_TOP_LEXICAL]
    for rank, block_id in enumerate(top):
        seeds[block_id] += 1.0 / (rank + 1)
    if words:
        by_name = lookup(conn, "defs", words, symbols)
        for ids in by_name.values():
            for block_id in ids:
                seeds[block_id] += W.SEED_NAME_WEIGHT / len(ids)
        stems = [w for w in words if len(w) >= 3]
        if stems:  # files named like a query word: src/router.py for "router"
            clauses = " OR ".join("path LIKE ? OR path LIKE ?" for _ in stems)
            args = [p for w in stems for p in (f"{w}.%", f"%/{w}.%")]
            files = symbols.files.get(tuple(args)) if symbols is not None else None
            if files is None:
                files = conn.execute(
                    f"SELECT id FROM files WHERE {clauses} LIMIT 5", args
                ).fetchall()
                if symbols is not None:
                    symbols.files[tuple(args)] = files
            for (file_id,) in files:
                blocks = conn.execute(
                    "SELECT id FROM blocks WHERE file_id = ? LIMIT 20", (file_id,)
                ).fetchall()
                for (block_id,) in blocks:
                    seeds[block_id] += W.SEED_PATH_WEIGHT / len(blocks) / len(files)
    return seeds


def _add_history(
    conn: sqlite3.Connection,
    terms: list[str],
    ordered: list[int],
    meta: dict[int, tuple],
    fused: dict[int, float],
    memo: HistoryMemo | None = None,
    kept: Symbols | None = None,
) -> None:
    """Rescore and re-sort ``ordered`` with what the git history says about their files."""
    files = {meta[i][0] for i in ordered}
    history_on, recency_on = W.HISTORY_WEIGHT > 0, W.RECENCY_WEIGHT > 0
    evidence = history_votes.file_scores(conn, terms, files, memo, kept) if history_on else {}
    recent = history_votes.recent_activity(conn, files, memo, kept) if recency_on else {}
    if not evidence and not recent:
        return
    best = fused[ordered[0]]
    for block_id in ordered:
        path = meta[block_id][0]
        fused[block_id] = (
            fused[block_id] / best
            + W.HISTORY_WEIGHT * evidence.get(path, 0.0)
            + W.RECENCY_WEIGHT * recent.get(path, 0.0)
        )
    ordered.sort(key=lambda i: (-fused[i], i))


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
