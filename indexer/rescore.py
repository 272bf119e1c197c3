"""BM25 over every query term, for the block search's candidates only.

On a large tree the block search scores only the query's rarest terms (``ranking._lexical``:
FTS5's ``bm25()`` costs microseconds per matching row, and "formatter" matches tens of
thousands of blocks), so its ~200 candidates come in the order of one or two words of an
eight-word subject. Here they are put in the order FTS5 would give them with *every* term:
the same BM25 (k1 = 1.2, b = 0.75, the column weights of ``weights.COLUMN_WEIGHTS``, FTS5's
floor for a negative IDF), computed in Python from the candidates' stored columns, with each
term's block count from the vocabulary (the search has it already) and the row count and
average row length from FTS5's own statistics record. Tokens are cut as the ``unicode61``
tokenizer cuts ASCII text (any byte other than a letter or digit ends a token) and stemmed by
the index's porter tokenizer itself (``tokens.stem``), so a term matches what its MATCH
would. A few hundred blocks take milliseconds; scoring the same terms over the whole index
is what the budget exists to avoid (bench/README.md, "Crates and folders"). What is read of
each block is kept across the writer's searches (``block_terms``), and a term held by few
blocks is looked for only in those (``_holders``); each term's share is the float it was
before either (a token's column weights, multiples of 0.5, are added up exactly in any order;
see ``Block.tokens``) and the shares are added in the same order, so the order is the same
bit for bit. Every candidate is read: the search uses every rank of the list, and no bound
from what is at hand places a candidate without its text (bench/README.md, "Edits, eighth
pass").
"""

from __future__ import annotations

import math
import sqlite3

from indexer.block_terms import Block, BlockTerms, read, varints
from indexer.tokens import fts_match, stem, vocabulary_term

_K1 = 1.2  # FTS5's bm25() constants
_B = 0.75
_IDF_FLOOR = 1e-6
# token -> its porter stem, across searches (the stemmer is a tokenizer round trip, ~30 us)
_STEMS: dict[bytes, str] = {}
_STEMS_KEPT = 50_000
FEW = 256  # a term in at most this many blocks: its blocks are asked of FTS5 (``_holders``)


def statistics(conn: sqlite3.Connection) -> tuple[int, float]:
    """Rows in ``blocks_fts`` and their average length in tokens (all columns), from the
    record FTS5 keeps for ``bm25()`` (row id 1 of the ``_data`` table: the row count, then
    each column's total tokens, as SQLite varints)."""
    row = conn.execute("SELECT block FROM blocks_fts_data WHERE id = 1").fetchone()
    values = varints(row[0]) if row and row[0] else []
    rows = values[0] if values else 0
    return rows, (sum(values[1:]) / rows if rows else 1.0)


def rescore(
    conn: sqlite3.Connection,
    ids: list[int],
    terms: list[str],
    df: dict[str, int],
    kept: BlockTerms | None = None,
) -> list[int]:
    """``ids`` best first by BM25 over all ``terms`` (``df``: each term's block count; a term
    of several tokens, which no vocabulary row holds, is left out as the search leaves it
    out); ties keep their order in ``ids``. ``kept``: the blocks kept across the searches on
    ``conn`` (see ``block_terms``); without it every block is read afresh."""
    rows, average = statistics(conn)
    idf: dict[str, float] = {}
    for term in terms:
        token, hits = vocabulary_term(term), df.get(term, 0)
        if token is not None and hits > 0:
            idf[token] = max(math.log((rows - hits + 0.5) / (hits + 0.5)), _IDF_FLOOR)
    if not ids or not idf:
        return ids
    # a token's stem is its start, but for the last letter ("happy" -> "happi"): only tokens
    # starting like a term's stem less that letter are looked at
    starts = {b" " + t[: max(3, len(t) - 1)].encode("utf-8") for t in idf}
    stems: dict[bytes, str | None] = {}  # token -> the term stem it is (None: no term)
    if len(_STEMS) > _STEMS_KEPT:
        _STEMS.clear()
    only = _holders(conn, starts, terms, df, idf)
    ids_read = ids
    if all(few is not None for few in only.values()):  # a block holding no term: score 0
        held_any: set[int] = set().union(*(few for few in only.values() if few is not None))
        ids_read = [i for i in ids if i in held_any]
    blocks = kept.get(conn, ids_read) if kept is not None else read(conn, ids_read)
    scores: dict[int, float] = {}
    for block_id, block in blocks.items():
        leads = [lead for lead in starts if (few := only[lead]) is None or block_id in few]
        held = _frequencies(block, leads, idf, stems)
        if held:
            norm = _K1 * (1 - _B + _B * block.length / average)
            scores[block_id] = sum(idf[t] * f * (_K1 + 1) / (f + norm) for t, f in held.items())
    order = {block_id: n for n, block_id in enumerate(ids)}
    return sorted(ids, key=lambda i: (-scores.get(i, 0.0), order[i]))


def _holders(
    conn: sqlite3.Connection,
    starts: set[bytes],
    terms: list[str],
    df: dict[str, int],
    idf: dict[str, float],
) -> dict[bytes, set[int] | None]:
    """For each term start (``lead``), the only blocks whose tokens starting with it can be
    a term's (None: any block). A token's stem keeps the token's first byte when that is an
    ASCII letter or digit (FTS5's porter stemmer only cuts or rewrites a word's end, and
    never all of it; ``unicode61`` only folds the case of ASCII), so such a token can only
    be a term whose stem starts with that byte, held by the blocks its ``MATCH`` finds: for
    terms in a few blocks (``FEW``) those are asked of FTS5, a lookup much cheaper than
    finding the start in every candidate's text."""
    holders: dict[str, set[int]] = {}  # term stem -> the blocks holding it
    for term in terms:
        token = vocabulary_term(term)
        if token in idf and token not in holders and df.get(term, 0) <= FEW:
            rows = conn.execute(
                "SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH ? LIMIT ?",
                (fts_match([term]), FEW + 1),
            ).fetchall()
            if len(rows) <= FEW:  # ``df`` may be older than the rows
                holders[token] = {r[0] for r in rows}
    out: dict[bytes, set[int] | None] = {}
    for lead in starts:
        first = lead[1:2]
        matching = [t for t in idf if t.encode("utf-8")[:1] == first]
        if first.isalnum() and all(t in holders for t in matching):
            out[lead] = set().union(*(holders[t] for t in matching))
        else:
            out[lead] = None
    return out


def _frequencies(
    block: Block, leads: list[bytes], idf: dict[str, float], stems: dict[bytes, str | None]
) -> dict[str, float]:
    """Each term stem's weighted count in ``block``: its tokens' column weights, added up
    term start by term start (``leads``, in ``starts``' order) and within one in the order
    tokens first come in the text (``Block.tokens``), the order in which the stems first come
    (the sum of the shares follows it)."""
    held: dict[str, float] = {}
    for lead in leads:
        for word, weight in block.tokens(lead):
            if word in stems:
                match = stems[word]
            else:
                stemmed = _STEMS.get(word)
                if stemmed is None and word.isdigit():  # ASCII digits: no rule of the
                    stemmed = word.decode("ascii")  # stemmer applies, it is its own stem
                elif stemmed is None:
                    stemmed = _STEMS[word] = stem(word.decode("utf-8", "replace"))
                match = stems[word] = stemmed if stemmed in idf else None
            if match is not None:
                held[match] = held.get(match, 0.0) + weight
    return held
