"""The file list: one full-text row per indexed file holding the distinct words of the file
(its path, and the names, signatures, docstrings and code of its blocks), searched with *all*
the query's terms.

Block-level BM25 (``ranking._lexical``) can afford only the rarest terms on a large tree: a
word such as ``formatter`` matches tens of thousands of blocks there, and scoring each match
is what costs time. A file row per file is two orders of magnitude fewer rows, so every term
of the query can be scored, and a file that holds most of the query's words becomes a
candidate even when none of its blocks holds the one or two rarest. The words are a function
of the rows ``block_rows`` already has, so an older index is filled in by a migration
(``schema.m007_file_words``) and an edit recomputes them from the stored rows.

The table is FTS5 with ``detail=none``: a file either holds a word or not (the words are
distinct), so positions would be dead weight; its rowid is the file's id.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable

from indexer import weights as W
from indexer.tokens import fts_match, rarest_within, split_cached, vocabulary_term

TABLE = "files_fts"
CREATE = (
    f"CREATE VIRTUAL TABLE {TABLE} USING fts5(words, tokenize='porter unicode61', detail='none')"
)
VOCAB = "files_vocab"
CREATE_VOCAB = f"CREATE VIRTUAL TABLE {VOCAB} USING fts5vocab({TABLE}, 'row')"
# Bytes that end a word (ASCII other than letters, digits and "_"), as spaces; UTF-8 bytes of
# other scripts stay word bytes (the FTS tokenizer splits what it must). A byte table and a
# split: regular expressions cost ~4x as much over every line of code indexed.
_SPACES = bytes(c if c >= 128 or c == 95 or chr(c).isalnum() else 32 for c in range(256))


def words(path: str, blocks: Iterable[tuple[str, str, str, str]]) -> str:
    """The distinct words of a file with these (name, signature, docstring, text) blocks, and
    the parts of its camelCase identifiers (the tokenizer splits ``snake_case`` itself, not
    ``camelCase``), sorted so the same file always gives the same row; "" for no blocks."""
    parts = [path]
    for block in blocks:
        parts.extend(block)
    if len(parts) == 1:
        return ""
    data = "\n".join(p for p in parts if p).encode("utf-8", errors="replace")
    tokens = {t.decode("utf-8", errors="replace") for t in set(data.translate(_SPACES).split())}
    out = {t.lower() for t in tokens}
    for token in tokens:
        if not (token.islower() or token.isupper() or token[1:].islower()):
            out.update(split_cached(token))
    return " ".join(sorted(out))


def put(conn: sqlite3.Connection, file_id: int, text: str) -> None:
    """Replace a file's row (none for a file without blocks). Call inside a transaction."""
    remove(conn, file_id)
    if text:
        conn.execute(f"INSERT INTO {TABLE}(rowid, words) VALUES (?, ?)", (file_id, text))


def remove(conn: sqlite3.Connection, file_id: int) -> None:
    conn.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (file_id,))


def stored_words(conn: sqlite3.Connection, file_id: int, path: str) -> str:
    """A file's words as its stored block rows give them."""
    rows = conn.execute(
        "SELECT name, signature, docstring, text FROM block_rows WHERE file_id = ?", (file_id,)
    )
    return words(path, rows)


def refresh(conn: sqlite3.Connection, file_id: int, path: str) -> None:
    """Recompute a file's row from its stored blocks (after an in-place edit of some)."""
    put(conn, file_id, stored_words(conn, file_id, path))


def update(conn: sqlite3.Connection, file_id: int, path: str, old: str, new: str) -> None:
    """After an edit replaced blocks holding the words ``old`` by blocks holding ``new`` (both
    ``words`` rows, the path's words in each): when the edit only added words, the file's row
    is its stored row plus them, the same row a recount gives (a row is the union of its
    blocks' words) without reading the file's other blocks (~10 ms on a 300 kB module);
    when a word may have left the file, the row is recomputed from the stored blocks."""
    if old == new:
        return
    added = set(new.split())
    row = None
    if not set(old.split()) - added:
        row = conn.execute(f"SELECT words FROM {TABLE} WHERE rowid = ?", (file_id,)).fetchone()
    if row is None:
        refresh(conn, file_id, path)
        return
    put(conn, file_id, " ".join(sorted(added.union(row[0].split()))))


def backfill(conn: sqlite3.Connection) -> None:
    """Fill the table from the rows an index already has (the migration that adds it)."""
    paths = dict(conn.execute("SELECT id, path FROM files"))
    current: int | None = None
    blocks: list[tuple[str, str, str, str]] = []
    rows = conn.execute(
        "SELECT file_id, name, signature, docstring, text FROM block_rows ORDER BY file_id"
    )
    for file_id, *block in rows:
        if file_id != current:
            if current is not None and current in paths:
                put(conn, current, words(paths[current], blocks))
            current, blocks = file_id, []
        blocks.append(tuple(block))
    if current is not None and current in paths:
        put(conn, current, words(paths[current], blocks))


def ranked(conn: sqlite3.Connection, terms: list[str], limit: int, common: float) -> list[int]:
    """File ids best first by the summed IDF of the query terms each file holds (BM25 with
    each term's frequency 1, the words being distinct, and no length normalisation: on the
    large dev tree any made the list worse, as the files a fix touches are the large ones).
    A term held by more than ``common`` x the files is left out (its IDF is near nil and
    each file it matches costs time); so are terms the tokenizer splits into several tokens,
    which a ``detail=none`` table cannot match as a phrase. The sum is taken in SQL: FTS5's
    ``bm25()`` costs microseconds per matching row, which thousands of files make tens of
    milliseconds."""
    files = conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
    weighted: list[tuple[float, str]] = []
    for term in dict.fromkeys(terms):
        token = vocabulary_term(term)
        if token is None:
            continue
        row = conn.execute(f"SELECT doc FROM {VOCAB} WHERE term = ?", (token,)).fetchone()
        df = row[0] if row else 0
        if 0 < df <= common * files:
            weighted.append((math.log((files - df + 0.5) / (df + 0.5) + 1.0), token))
    if not weighted or limit <= 0:
        return []
    each = f"SELECT rowid AS id, ? AS w FROM {TABLE} WHERE {TABLE} MATCH ?"
    union = " UNION ALL ".join(each for _ in weighted)
    args: list[object] = [v for w, token in weighted for v in (w, fts_match([token]))]
    sql = f"SELECT id FROM ({union}) GROUP BY id ORDER BY SUM(w) DESC, id LIMIT ?"
    return [row[0] for row in conn.execute(sql, (*args, limit))]


def best_blocks(
    conn: sqlite3.Connection, files: list[int], weights: dict[str, float]
) -> dict[int, int]:
    """file id -> the block of the file whose defined names hold the most query weight: each
    term in ``weights`` (lower-cased, with its block-level IDF) found in a name the block
    defines counts its weight (a substring test on ``defs``, read from its file index alone);
    ties, and files where no name holds a term, go to the earlier block. FTS5 cannot do this
    cheaply: ``bm25()`` counts every match of every term in the whole index first, and
    rowid-bounded matches seek every segment."""
    out: dict[int, int] = {}
    best: dict[int, tuple[float, int]] = {}
    for start in range(0, len(files), 200):
        chunk = files[start : start + 200]
        marks = ",".join("?" * len(chunk))
        for file_id, block_id in conn.execute(
            f"SELECT file_id, MIN(id) FROM block_rows WHERE file_id IN ({marks}) GROUP BY file_id",
            chunk,
        ):
            best[file_id] = (0.0, -block_id)
        for file_id, block_id, name in conn.execute(
            f"SELECT file_id, block_id, name FROM defs WHERE file_id IN ({marks})", chunk
        ):
            score = (sum(w for term, w in weights.items() if term in name), -block_id)
            if score > best.get(file_id, (0.0, 0)):
                best[file_id] = score
    for file_id, (_, negative) in best.items():
        out[file_id] = -negative
    return out


def candidates(
    conn: sqlite3.Connection, terms: list[str], lexical: list[int], df_cache: dict[str, int]
) -> list[int]:
    """One block per file of the file list's top ``FILE_CANDIDATES``, best file first: the
    file's first block in ``lexical`` (the block-level BM25 list, whose term counts are in
    ``df_cache``) if it has one there, else its block holding the most query weight. Only
    when ``lexical`` had to leave terms out (a large tree): where BM25 scores every term, the
    file list cost the small dev sets queries at rank 1 (bench/README.md)."""
    if W.FILE_LIST_WEIGHT <= 0 or W.FILE_CANDIDATES <= 0:
        return []
    if len(rarest_within(terms, df_cache, W.MATCH_DOC_BUDGET)[0]) == len(terms):
        return []
    files = ranked(conn, terms, W.FILE_CANDIDATES, W.FILE_COMMON_SHARE)
    if not files:
        return []
    owner: dict[int, int] = {}
    position = {block_id: n for n, block_id in enumerate(lexical)}
    wanted = set(files)
    for start in range(0, len(lexical), 500):
        chunk = lexical[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for block_id, file_id in conn.execute(
            f"SELECT id, file_id FROM block_rows WHERE id IN ({marks})", chunk
        ):
            if file_id in wanted and (
                file_id not in owner or position[block_id] < position[owner[file_id]]
            ):
                owner[file_id] = block_id
    blocks = conn.execute("SELECT MAX(id) FROM block_rows").fetchone()[0] or 1
    weights = {  # BM25's IDF at the block level
        t: math.log((blocks - df_cache.get(t, 0) + 0.5) / (df_cache.get(t, 0) + 0.5) + 1.0)
        for t in terms
    }
    owner.update(best_blocks(conn, [f for f in files if f not in owner], weights))
    return [owner[f] for f in files if f in owner]
