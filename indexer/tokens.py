"""Turning code and queries into search terms: split identifiers, paths and stop words.

FTS5's unicode61 tokenizer already splits ``snake_case`` and paths on punctuation; what it
cannot do is split ``camelCase``/``PascalCase``, so those parts are computed here and stored
in their own column. Queries go through the same splitting so ``getUser`` finds ``get_user``.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from functools import lru_cache
from itertools import chain

_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_WORD = re.compile(r"\w+")

STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        "find",
        "show",
        "all",
        "code",
        "function",
        "method",
        "class",
        "please",
        "whats",
    ]
)


@lru_cache(maxsize=65536)
def split_cached(word: str) -> tuple[str, ...]:
    return tuple(split_identifier(word))


def split_identifier(word: str) -> list[str]:
    """``parseHTTPResponse_v2`` -> ``["parse", "http", "response", "v", "2"]`` (lower-cased)."""
    if word.isascii():  # no part spans a "_": the pieces' parts are the whole word's
        return list(map(str.lower, _PARTS.findall(word)))
    parts: list[str] = []
    for piece in word.split("_"):
        if piece.isascii():
            parts.extend(map(str.lower, _PARTS.findall(piece)))
        elif piece:  # case rules of other scripts are not ours to guess: keep the word whole
            parts.append(piece.lower())
    return parts


# The runs of identifier characters met so far (as bytes), and the camelCase parts of those
# that hold any: a repository repeats its names, so each run is judged once per process
# (cleared when the set grows past the cap).
_SEEN_RUNS: set[bytes] = set()
_CAMEL: dict[bytes, tuple[str, ...]] = {}
_CAMEL_KEYS: set[bytes] = set()
_SEEN_CAP = 262144
camel_lock = threading.Lock()
# Every ASCII byte that cannot be in an identifier becomes a space; the others, and every byte
# of a multi-byte character, stay.
_KEEP = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$")
_RUNS_TABLE = bytes(c if c in _KEEP or c >= 0x80 else 0x20 for c in range(256))


def camel_parts(text: str) -> str:
    """Space-joined parts of every camelCase identifier in ``text`` (deduplicated, in the order
    the identifiers first appear, so the same text always gives the same column).

    The identifiers are ``_IDENT``'s matches, found run by run: the text's UTF-8 bytes are cut
    at every ASCII byte no identifier holds (C-speed ``translate`` and ``split``, where the
    regular expression over the whole text cost more than everything else here), and a run
    not met before is matched with ``_IDENT`` on its own. No match spans such a byte, so the
    identifiers are exactly those of the whole text."""
    return camel_of_runs(identifier_runs(text.encode("utf-8", "surrogatepass")))


def identifier_runs(data: bytes) -> list[bytes]:
    """The runs of ``data`` (a text's UTF-8 bytes) that identifiers can be found in: cut at
    every ASCII byte no identifier holds (see ``camel_parts``)."""
    return data.translate(_RUNS_TABLE).split()


def camel_of_runs(runs: list[bytes]) -> str:
    """``camel_parts`` of the text these ``identifier_runs`` came from."""
    with camel_lock:
        if not _SEEN_RUNS.issuperset(runs):
            new = set(runs).difference(_SEEN_RUNS)
            if len(_SEEN_RUNS) + len(new) > _SEEN_CAP:
                _SEEN_RUNS.clear()
                _CAMEL.clear()
                _CAMEL_KEYS.clear()
                new = set(runs)
            _SEEN_RUNS.update(new)
            for run in new:
                parts = _run_parts(run)
                if parts is not None:
                    _CAMEL[run] = parts
                    _CAMEL_KEYS.add(run)
        if _CAMEL_KEYS.isdisjoint(runs):
            return ""
        # first appearance first: a set's order would change with the process's hash seed,
        # and with it the column's text, so two builds of one tree would differ
        found = [_CAMEL[run] for run in dict.fromkeys(runs) if run in _CAMEL_KEYS]
        return " ".join(dict.fromkeys(chain.from_iterable(found)))


def _run_parts(run: bytes) -> tuple[str, ...] | None:
    """The parts of the camelCase identifiers in one run; None when it holds none."""
    if run.isascii() and (run.islower() or run.isupper()):  # C-speed filter: no camelCase
        return None
    parts: list[str] = []
    camel = False
    for ident in _IDENT.findall(run.decode("utf-8", "surrogatepass")):
        if ident.islower() or ident.isupper() or ident[1:].islower():
            continue
        camel = True
        parts.extend(split_identifier(ident))
    return tuple(parts) if camel else None


def name_terms(name: str) -> str:
    """A qualified name plus its split parts, for the name column."""
    return name + " " + " ".join(split_cached(name))


def path_terms(path: str) -> str:
    """``src/userStore/get_user.py`` -> ``src userStore get_user py user store get user``."""
    words = _WORD.findall(path)
    return " ".join(words) + " " + " ".join(p for w in words for p in split_identifier(w))


MAX_QUERY_WORDS = 64  # a question is a sentence or two; each word costs SQL terms
MAX_QUERY_CHARS = 1000


def bounded_query(query: str) -> str:
    """``query`` cut after its 64th word and at 1,000 characters. Each word becomes terms of
    the SQL a search runs, so a pasted log or a 100 kB query (a model can be told to send one)
    would pass SQLite's limits ("Expression tree is too large", "LIKE or GLOB pattern too
    complex") and fail the search instead of answering it."""
    query = query[:MAX_QUERY_CHARS]
    for count, match in enumerate(_WORD.finditer(query), 1):
        if count == MAX_QUERY_WORDS:
            return query[: match.end()]
    return query


def query_words(query: str) -> list[str]:
    """The identifiers/words of a query, minus stop words; empty means nothing to search."""
    out: list[str] = []
    for word in _WORD.findall(query):
        if word.lower() not in STOP_WORDS:
            out.append(word)
    return out


def query_terms(query: str) -> list[str]:
    """Lower-cased search terms: each word plus its identifier parts, deduplicated."""
    terms: dict[str, None] = {}
    for word in query_words(query):
        low = word.lower().strip("_")
        if low and low not in STOP_WORDS:
            terms[low] = None
        for part in split_identifier(word):
            if part not in STOP_WORDS and len(part) > 1:
                terms[part] = None
    return list(terms)


_stem_lock = threading.Lock()
_stem_db: list[sqlite3.Connection] = []


@lru_cache(maxsize=65536)
def _tokens(term: str) -> tuple[str, ...]:
    """The distinct tokens FTS5's porter tokenizer stores for ``term`` (asked of SQLite
    itself, so vocabulary lookups use exactly the indexed form)."""
    with _stem_lock:
        if not _stem_db:
            conn = sqlite3.connect(":memory:", check_same_thread=False)
            conn.execute("CREATE VIRTUAL TABLE s USING fts5(x, tokenize='porter unicode61')")
            conn.execute("CREATE VIRTUAL TABLE sv USING fts5vocab(s, 'row')")
            _stem_db.append(conn)
        conn = _stem_db[0]
        conn.execute("INSERT INTO s(x) VALUES (?)", (term,))
        rows = conn.execute("SELECT term FROM sv").fetchall()
        conn.execute("DELETE FROM s")
    return tuple(row[0] for row in rows)


def stem(term: str) -> str:
    """The token FTS5's porter tokenizer stores for ``term``; a term of several tokens (a
    phrase) is kept as is."""
    tokens = _tokens(term)
    return tokens[0] if len(tokens) == 1 else term


def vocabulary_term(term: str) -> str | None:
    """The vocabulary row to look ``term``'s document count up in; None for a phrase
    (``kiln_typed_3`` is the tokens ``kiln typed 3``), which no row can match: its count is
    0 without asking (the lookup costs a probe of every FTS segment)."""
    tokens = _tokens(term)
    return tokens[0] if len(tokens) == 1 else None


def rarest_within(terms: list[str], counts: dict[str, int], budget: int) -> tuple[list[str], int]:
    """Terms rarest first while the documents they match stay within ``budget`` (the rarest is
    always kept), and how many documents that is: the common words left out are the ones
    BM25 would weigh least, and scoring their matches is what costs time."""
    chosen: list[str] = []
    used = 0
    for term in sorted(terms, key=lambda t: counts[t]):
        if not chosen or used + counts[term] <= budget:
            chosen.append(term)
            used += counts[term]
    return chosen, used


def fts_match(terms: list[str], op: str = "OR") -> str:
    """An FTS5 MATCH expression joining quoted terms (quoting neutralises FTS syntax)."""
    return f" {op} ".join('"' + t.replace('"', '""') + '"' for t in terms)
