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
is what the budget exists to avoid (bench/README.md, "Crates and folders").
"""

from __future__ import annotations

import math
import sqlite3
from bisect import bisect_right

from indexer import weights as W
from indexer.store import FTS_COLUMNS
from indexer.tokens import stem, vocabulary_term

_K1 = 1.2  # FTS5's bm25() constants
_B = 0.75
_IDF_FLOOR = 1e-6
# token -> its porter stem, across searches (the stemmer is a tokenizer round trip, ~30 us)
_STEMS: dict[bytes, str] = {}
_STEMS_KEPT = 50_000
# Bytes that end a token: ASCII other than letters and digits (UTF-8 bytes of other scripts
# stay token bytes); ASCII capitals fold to lower case, as the tokenizer folds case.
_SPACES = bytes(
    c if c >= 128 or chr(c).islower() or chr(c).isdigit() else c + 32 if chr(c).isupper() else 32
    for c in range(256)
)


def statistics(conn: sqlite3.Connection) -> tuple[int, float]:
    """Rows in ``blocks_fts`` and their average length in tokens (all columns), from the
    record FTS5 keeps for ``bm25()`` (row id 1 of the ``_data`` table: the row count, then
    each column's total tokens, as SQLite varints)."""
    row = conn.execute("SELECT block FROM blocks_fts_data WHERE id = 1").fetchone()
    values = _varints(row[0]) if row and row[0] else []
    rows = values[0] if values else 0
    return rows, (sum(values[1:]) / rows if rows else 1.0)


def _varints(data: bytes) -> list[int]:
    out: list[int] = []
    i = 0
    while i < len(data):
        value = 0
        for n in range(9):
            byte = data[i]
            i += 1
            if n == 8:  # the ninth byte holds eight bits
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def rescore(
    conn: sqlite3.Connection, ids: list[int], terms: list[str], df: dict[str, int]
) -> list[int]:
    """``ids`` best first by BM25 over all ``terms`` (``df``: each term's block count; a term
    of several tokens, which no vocabulary row holds, is left out as the search leaves it
    out); ties keep their order in ``ids``."""
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
    weights = [W.COLUMN_WEIGHTS[c] for c in FTS_COLUMNS]
    width = len(FTS_COLUMNS)
    scores: dict[int, float] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        sizes = conn.execute(f"SELECT id, sz FROM blocks_fts_docsize WHERE id IN ({marks})", chunk)
        # a column under 128 tokens is one varint byte: most rows are all such bytes
        lengths = {
            block_id: sum(size) if size.isascii() else sum(_varints(size))
            for block_id, size in sizes
        }
        # every column of every candidate in one text, each after a space: the search for a
        # term's tokens is then a few C-speed finds per term, not one per column. SQLite joins
        # a row's columns and hands over their UTF-8 bytes (the columns are NOT NULL text)
        # with each column's length in bytes, so no column is decoded or encoded here.
        joined = " || ' ' || ".join(FTS_COLUMNS)
        sql = (
            f"SELECT id, CAST({joined} AS BLOB), "
            + ", ".join(f"length(CAST({c} AS BLOB))" for c in FTS_COLUMNS)
            + f" FROM block_rows WHERE id IN ({marks})"
        )
        texts: list[bytes] = [b""]
        bounds: list[int] = []  # where each column starts in the text
        blocks: list[int] = []  # the block of each row of columns in ``bounds``
        at = 1
        for row in conn.execute(sql, chunk):
            texts.append(row[1])
            blocks.append(row[0])
            for size in row[2:]:
                bounds.append(at)
                at += size + 1
        text = b" ".join(texts).translate(_SPACES) + b" "
        freq: dict[int, dict[str, float]] = {}
        for lead in starts:
            at = text.find(lead)
            while at >= 0:
                end = text.find(b" ", at + 1)
                word = text[at + 1 : end]
                if word in stems:
                    match = stems[word]
                else:
                    stemmed = _STEMS.get(word)
                    if stemmed is None:
                        stemmed = _STEMS[word] = stem(word.decode("utf-8", "replace"))
                    match = stems[word] = stemmed if stemmed in idf else None
                if match is not None:
                    column = bisect_right(bounds, at + 1) - 1
                    block_id, weight = blocks[column // width], weights[column % width]
                    held = freq.setdefault(block_id, {})
                    held[match] = held.get(match, 0.0) + weight
                at = text.find(lead, end)
        for block_id, held in freq.items():
            norm = _K1 * (1 - _B + _B * lengths.get(block_id, 0) / average)
            scores[block_id] = sum(idf[t] * f * (_K1 + 1) / (f + norm) for t, f in held.items())
    order = {block_id: n for n, block_id in enumerate(ids)}
    return sorted(ids, key=lambda i: (-scores.get(i, 0.0), order[i]))
