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
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from indexer import weights as W
from indexer.tokens import fts_match, rarest_within, split_cached, vocabulary_term

if TYPE_CHECKING:
    from indexer.search_cache import Symbols

TABLE = "files_fts"
CREATE = (
    f"CREATE VIRTUAL TABLE {TABLE} USING fts5(words, tokenize='porter unicode61', detail='none')"
)
# Files whose row an edit has made out of date: ``spliced`` marks them, ``flush`` (an idle
# editor, the end of an update) rewrites their rows. Rewriting a file's row re-tokenizes every
# distinct word of the file twice (FTS5 reads the old row to delete it), 2-5 ms CPU on a 300 kB
# module, more than the rest of an edit; the list is a candidate source for large trees, where
# a row a couple of seconds behind the buffer costs nothing a block-level search would not find.
STALE = "files_stale"
CREATE_STALE = f"CREATE TABLE {STALE} (file_id INTEGER PRIMARY KEY)"
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
    return " ".join(sorted(_word_set(parts))) if len(parts) > 1 else ""


def words_of(parts: list[str], tokens: set[bytes]) -> str:
    """``words`` of a file whose texts' ``tokens`` are already cut (``rows.prepare`` has them
    from the camelCase column's runs) and whose other strings (path, names, signatures,
    docstrings) are ``parts``."""
    tokens.update(text_tokens("\n".join(p for p in parts if p).encode("utf-8", errors="replace")))
    return " ".join(sorted(_words(tokens)))


def text_tokens(data: bytes) -> list[bytes]:
    """The word tokens of a text's UTF-8 bytes (``words`` cuts every string this way)."""
    return data.translate(_SPACES).split()


def _word_set(parts: Iterable[str]) -> set[str]:
    data = "\n".join(p for p in parts if p).encode("utf-8", errors="replace")
    return _words(set(text_tokens(data)))


# The tokens met so far that hold a camelCase word (-> its parts) and those that do not: a
# repository repeats its names, so each token is judged once per process.
_CAMEL: dict[bytes, tuple[str, ...]] = {}
_CAMEL_KEYS: set[bytes] = set()
_PLAIN: set[bytes] = set()
_MET_CAP = 262144
_met_lock = threading.Lock()


def _words(tokens: set[bytes]) -> set[str]:
    """Each token lower-cased, and the parts of those that are camelCase, with set operations
    only: decoding and lower-casing the tokens joined by spaces gives each token's own (a
    space ends a token for the UTF-8 decoder and for ``str.lower``'s one rule that looks at
    neighbours, the final sigma), and only tokens not met before are judged in Python."""
    if not tokens:
        return set()
    out = set(b" ".join(tokens).decode("utf-8", errors="replace").lower().split(" "))
    with _met_lock:
        new = tokens.difference(_PLAIN, _CAMEL_KEYS)
        if new:
            if len(_PLAIN) + len(_CAMEL_KEYS) + len(new) > _MET_CAP:
                _PLAIN.clear()
                _CAMEL.clear()
                _CAMEL_KEYS.clear()
                new = tokens
            for token in new:
                word = token.decode("utf-8", errors="replace")
                if word.islower() or word.isupper() or word[1:].islower():
                    _PLAIN.add(token)
                else:
                    _CAMEL[token] = split_cached(word)
                    _CAMEL_KEYS.add(token)
        camel = tokens.intersection(_CAMEL_KEYS)
        if camel:
            out.update(*map(_CAMEL.__getitem__, camel))
    return out


# Files being edited: path -> (content digest, how many of the file's blocks (and its path)
# hold each word, the row or None until asked for). A pure function of the content, so a
# digest names it whatever the index; an edit inside one function then updates the counts from
# that function's text alone, and the row (a sort of every distinct word) is built only when
# ``flush`` writes it.
_EDITED: OrderedDict[str, tuple[str, Counter[str], str | None]] = OrderedDict()
_EDITED_MAX = 16
_edited_lock = threading.Lock()

Block = tuple[str, str, str, str]  # name, signature, docstring, text


def spliced(
    conn: sqlite3.Connection,
    file_id: int,
    path: str,
    digests: tuple[str, str],
    old: list[Block],
    new: list[Block],
    blocks: int,
) -> None:
    """Count a file's words after an edit replaced its blocks ``old`` by ``new`` (content
    digest ``digests[0]`` before, ``digests[1]`` after; ``blocks`` in the file now), and mark
    its row for ``flush`` if the set of words changed; call after the new rows are written.
    Without counts for the version before (no ``prime``, or a whole-file update came between)
    the row is marked without counting: ``flush`` counts from the stored rows."""
    with _edited_lock:
        entry = _EDITED.pop(path, None)
    if entry is None or entry[0] != digests[0]:
        conn.execute(f"INSERT OR IGNORE INTO {STALE}(file_id) VALUES (?)", (file_id,))
        return
    _, counts, text = entry
    before: Counter[str] = Counter()
    for block in old:
        before.update(_word_set(block))
    after: Counter[str] = Counter()
    for block in new:
        after.update(_word_set(block))
    changed = False
    for word in before.keys() | after.keys():
        step = after[word] - before[word]
        if step:
            held = counts[word]
            counts[word] = held + step
            if held <= 0 or held + step <= 0:  # the word came or went
                changed = True
                if held + step <= 0:
                    del counts[word]
    if changed or not blocks:
        conn.execute(f"INSERT OR IGNORE INTO {STALE}(file_id) VALUES (?)", (file_id,))
    _keep(path, digests[1], counts, None if changed else text)


def flush(conn: sqlite3.Connection) -> int:
    """Rewrite the rows ``spliced`` marked out of date (from the counts it kept, or from the
    stored block rows); returns how many. Call inside a transaction."""
    stale = [row[0] for row in conn.execute(f"SELECT file_id FROM {STALE}")]
    for file_id in stale:
        row = conn.execute("SELECT path, hash, blocks FROM files WHERE id = ?", (file_id,))
        found = row.fetchone()
        if found is None:
            conn.execute(f"DELETE FROM {STALE} WHERE file_id = ?", (file_id,))
            continue
        path, digest, blocks = found
        with _edited_lock:
            entry = _EDITED.get(path)
        if entry is not None and entry[0] == digest:
            counts, text = entry[1], entry[2]
        else:
            counts, text = _count(conn, file_id, path), None
        if text is None:
            text = _row(counts)
            _keep(path, digest, counts, text)
        put(conn, file_id, text if blocks else "")
    return len(stale)


def prime(conn: sqlite3.Connection, path: str, digest: str) -> None:
    """Count an opened file's words now (its row as stored has content ``digest``), so that
    its first edit updates the counts from the edited function alone."""
    with _edited_lock:
        entry = _EDITED.get(path)
    if entry is not None and entry[0] == digest:
        return
    row = conn.execute("SELECT id, hash, blocks FROM files WHERE path = ?", (path,)).fetchone()
    if row is None or row[1] != digest or not row[2]:
        return
    _keep(path, digest, _count(conn, row[0], path), None)


def _row(counts: Counter[str]) -> str:
    return " ".join(sorted(w for w, n in counts.items() if n > 0))


def _count(conn: sqlite3.Connection, file_id: int, path: str) -> Counter[str]:
    counts = Counter(_word_set([path]))
    for block in conn.execute(
        "SELECT name, signature, docstring, text FROM block_rows WHERE file_id = ?", (file_id,)
    ):
        counts.update(_word_set(block))
    return counts


def _keep(path: str, digest: str, counts: Counter[str], text: str | None) -> None:
    """Keep ``counts`` (owned by the cache from now on: later edits update it in place)."""
    with _edited_lock:
        _EDITED[path] = (digest, counts, text)
        _EDITED.move_to_end(path)
        while len(_EDITED) > _EDITED_MAX:
            _EDITED.popitem(last=False)


def put(conn: sqlite3.Connection, file_id: int, text: str) -> None:
    """Replace a file's row (none for a file without blocks). Call inside a transaction."""
    remove(conn, file_id)
    if text:
        conn.execute(f"INSERT INTO {TABLE}(rowid, words) VALUES (?, ?)", (file_id, text))


def remove(conn: sqlite3.Connection, file_id: int) -> None:
    conn.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (file_id,))
    conn.execute(f"DELETE FROM {STALE} WHERE file_id = ?", (file_id,))


def backfill(conn: sqlite3.Connection) -> None:
    """Fill the table from the rows an index already has (the migration that adds it)."""
    paths = dict(conn.execute("SELECT id, path FROM files"))
    current: int | None = None
    blocks: list[tuple[str, str, str, str]] = []
    rows = conn.execute(
        "SELECT file_id, name, signature, docstring, text FROM block_rows ORDER BY file_id"
    )
    insert = f"INSERT INTO {TABLE}(rowid, words) VALUES (?, ?)"  # a new, empty table
    for file_id, *block in rows:
        if file_id != current:
            if current is not None and current in paths:
                conn.execute(insert, (current, words(paths[current], blocks)))
            current, blocks = file_id, []
        blocks.append(tuple(block))
    if current is not None and current in paths:
        conn.execute(insert, (current, words(paths[current], blocks)))


def ranked(
    conn: sqlite3.Connection,
    terms: list[str],
    limit: int,
    common: float,
    under: list[str] | None = None,
) -> list[int]:
    """File ids best first by the summed IDF of the query terms each file holds (BM25 with
    each term's frequency 1, the words being distinct, and no length normalisation: on the
    large dev tree any made the list worse, as the files a fix touches are the large ones).
    A term held by more than ``common`` x the files is left out (its IDF is near nil and
    each file it matches costs time); so are terms the tokenizer splits into several tokens,
    which a ``detail=none`` table cannot match as a phrase. The sum is taken in SQL: FTS5's
    ``bm25()`` costs microseconds per matching row, which thousands of files make tens of
    milliseconds. With ``under`` (folder prefixes ending in "/"), only the files below them."""
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
    where = ""
    if under:  # a range of the path index per folder: "a/b/" <= path < "a/b0" ("0" follows "/")
        ranges = " OR ".join("(path >= ? AND path < ?)" for _ in under)
        where = f"WHERE id IN (SELECT id FROM files WHERE {ranges})"
        args.extend(v for prefix in under for v in (prefix, prefix[:-1] + "0"))
    sql = f"SELECT id FROM ({union}) {where} GROUP BY id ORDER BY SUM(w) DESC, id LIMIT ?"
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
        if not weights:
            continue
        # only names holding a term can beat a file's first block: SQLite picks them out
        holds = " OR ".join("instr(name, ?) > 0" for _ in weights)
        for file_id, block_id, name in conn.execute(
            f"SELECT file_id, block_id, name FROM defs WHERE file_id IN ({marks}) AND ({holds})",
            [*chunk, *weights],
        ):
            score = (sum(w for term, w in weights.items() if term in name), -block_id)
            if score > best.get(file_id, (0.0, 0)):
                best[file_id] = score
    for file_id, (_, negative) in best.items():
        out[file_id] = -negative
    return out


def candidates(
    conn: sqlite3.Connection,
    terms: list[str],
    lexical: list[int],
    df_cache: dict[str, int],
    kept: Symbols | None = None,
) -> list[int]:
    """One block per file of the file list's top ``FILE_CANDIDATES``, best file first: the
    file's first block in ``lexical`` (the block-level BM25 list, whose term counts are in
    ``df_cache``) if it has one there, else its block holding the most query weight. Only
    when ``lexical`` had to leave terms out (a large tree): where BM25 scores every term, the
    file list cost the small dev sets queries at rank 1 (bench/README.md). ``kept``: the file
    of each block, kept across the writer's searches (a splice keeps a row's file; any other
    write clears it)."""
    if W.FILE_LIST_WEIGHT <= 0 or W.FILE_CANDIDATES <= 0:
        return []
    if len(rarest_within(terms, df_cache, W.MATCH_DOC_BUDGET)[0]) == len(terms):
        return []
    files = ranked(conn, terms, W.FILE_CANDIDATES, W.FILE_COMMON_SHARE)
    return blocks_of(conn, files, terms, lexical, df_cache, kept)


def blocks_of(
    conn: sqlite3.Connection,
    files: list[int],
    terms: list[str],
    lexical: list[int],
    df_cache: dict[str, int],
    kept: Symbols | None = None,
) -> list[int]:
    """One block per file of ``files``, in their order: the file's first block in ``lexical``
    if it has one there, else its block holding the most query weight (``kept``: see
    ``candidates``)."""
    if not files:
        return []
    owner: dict[int, int] = {}
    position = {block_id: n for n, block_id in enumerate(lexical)}
    wanted = set(files)
    for block_id, file_id in _files_of(conn, lexical, kept):
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


def _files_of(conn: sqlite3.Connection, ids: list[int], kept: Symbols | None) -> list[tuple]:
    """(block id, file id) of each of ``ids`` that has a row."""
    known = kept.block_files if kept is not None else {}
    missing = [block_id for block_id in ids if block_id not in known]
    found: dict[int, int] = {}
    for start in range(0, len(missing), 500):
        chunk = missing[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found.update(
            conn.execute(f"SELECT id, file_id FROM block_rows WHERE id IN ({marks})", chunk)
        )
    known.update(found)
    return [(block_id, known[block_id]) for block_id in ids if block_id in known]
