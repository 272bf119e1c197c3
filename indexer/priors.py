"""Priors of the search: what a candidate's name and place say before any history, on top
of the fused lexical, graph and file-list scores (``ranking.search``). Every number comes
from ``weights``."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from functools import lru_cache

from indexer import weights as W
from indexer.paths import (
    is_example_path,
    is_generated_path,
    is_test_path,
    is_vendored_path,
    nested_package_roots,
)
from indexer.structure import is_tooling_path
from indexer.tokens import query_words, split_cached, stem

_NAME_SPLIT = re.compile(r"::|\.|, ")
_WORDS = re.compile(r"[A-Za-z0-9]+")
# The owner in a member reference: ``Range.hashCode()``, ``Parser#unescape``, ``Foo::bar``
# (the first of a chain: ``Outer.Inner.method`` -> ``Outer``).
_MEMBER_OWNER = re.compile(r"(?<![\w.#:])([A-Za-z][A-Za-z0-9_]+)(?:\.|#|::)(?=[A-Za-z_])")


@lru_cache(maxsize=65536)  # asked for every candidate of every search; callers only read it
def short_names(qualified: str) -> set[str]:
    """Names a block defines, from its (possibly merged) qualified name, lower-cased."""
    parts = [p.strip() for p in qualified.split(", ")]
    return {_NAME_SPLIT.split(p)[-1].lower() for p in parts if p}


def joined_words(query: str, longest: int = 4) -> set[str]:
    """Names a run of query words could spell: "log startup" -> ``log_startup``, ``logstartup``
    (how ``log_startup`` and ``LogStartup`` look lower-cased), so asking in words for a
    definition finds it by name, not a neighbour named after one of the words."""
    parts = [w.lower() for w in _WORDS.findall(query)]
    out: set[str] = set()
    for size in range(2, longest + 1):
        for i in range(len(parts) - size + 1):
            run = parts[i : i + size]
            out.add("_".join(run))
            out.add("".join(run))
    return out


class Forms:
    """A query's words in the form names are compared in: as written, or with
    ``STEMMED_NAMES`` as stems (the ones FTS5's porter tokenizer gives, lower-cased:
    ``options`` -> ``option``, ``allows`` -> ``allow``), so "allows lists" names ``allow_list``.
    ``joined`` (runs of words spelling a name, ``log_startup``, ``logstartup``) are stemmed only
    when all letters. A name's word is stemmed only when it could meet one of the stems: a stem
    keeps its word's first two letters (the stemmer rewrites a word's end), and the lookup, a
    round trip through SQLite's tokenizer per word not met before, is what a search over many
    new names (the first after an edit) would otherwise pay for each."""

    def __init__(
        self, words: Iterable[str], joined: Iterable[str] = (), stemmed: bool = True
    ) -> None:
        words, joined = frozenset(words), frozenset(joined)
        self.several = stemmed  # more than one word: not an editor's search for a name
        self.stemmed = stemmed and W.STEMMED_NAMES
        if self.stemmed:
            self.stems = stems(words) | stems(w for w in joined if w.isalpha()) | joined
        else:
            self.stems = words | joined
        self.heads = frozenset(s[:2] for s in self.stems)

    def __len__(self) -> int:
        return len(self.stems)

    def form(self, word: str) -> str:
        """``word`` (lower-cased) as it is compared with these stems."""
        if not self.stemmed or word[:2] not in self.heads or "_" in word:
            return word
        return stem(word)

    def meets(self, qualified: str) -> bool:
        """Whether a name ``qualified`` defines is one of these words."""
        names = short_names(qualified)
        if not self.stemmed or self.heads.isdisjoint(_heads(qualified, True)):  # as written
            return not self.stems.isdisjoint(names)
        return any(self.form(w) in self.stems for w in names)


@lru_cache(maxsize=65536)
def _heads(qualified: str, short: bool) -> frozenset[str]:
    """The first two letters of the names (``short``) or name words of ``qualified``."""
    return frozenset(w[:2] for w in (short_names(qualified) if short else _name_parts(qualified)))


def name_match(name: str, terms: Forms) -> float:
    """How well a qualified name matches the query terms: coverage x precision, in [0, 1]."""
    parts: frozenset[str] | set[str] = _name_parts(name)
    if terms.stemmed and not terms.heads.isdisjoint(_heads(name, False)):
        parts = {terms.form(p) for p in parts}
    common = len(parts & terms.stems)
    return (common / len(terms)) * (common / len(parts)) if parts and len(terms) else 0.0


@lru_cache(maxsize=65536)
def _name_parts(name: str) -> frozenset[str]:
    return frozenset(split_cached(name.replace(".", "_").replace(",", "_").replace(":", "_")))


def stems(words: Iterable[str]) -> frozenset[str]:
    """The stems FTS5's porter tokenizer gives ``words``; a word holding ``_`` is several
    tokens, which ``stem`` keeps as they are (no lookup)."""
    return frozenset(w if "_" in w else stem(w) for w in words)


def names_a_definition(ordered: list[int], meta: dict[int, tuple], terms: set[str]) -> bool:
    """Whether the query is the name of a candidate definition ("send request" for
    ``send_request``): then it asks for that definition, and neither the commit history nor
    the code a named test exercises should outvote it."""
    for block_id in ordered[: W.SEED_TOP_LEXICAL]:
        for part in meta[block_id][2].split(", "):  # merged siblings list several names
            if set(split_cached(_NAME_SPLIT.split(part.strip())[-1])) == terms:
                return True
    return False


class Vendored:
    """Whether a path is a vendored copy: by folder name, or a whole package inside a nested
    ``packages/`` folder of a Python package (one lookup per such folder and search)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._packages: dict[str, bool] = {}

    def __call__(self, path: str) -> bool:
        if is_vendored_path(path):
            return True
        for parent in nested_package_roots(path):
            if parent not in self._packages:
                row = self._conn.execute(
                    "SELECT 1 FROM files WHERE path = ?", (parent + "/__init__.py",)
                ).fetchone()
                self._packages[parent] = row is not None
            if self._packages[parent]:
                return True
        return False


def place_penalty(path: str) -> float:
    """The multiplier for where a file sits: tests, examples, tooling (1.0 elsewhere)."""
    if is_test_path(path):
        return W.TEST_PENALTY
    if is_example_path(path):
        return W.EXAMPLE_PENALTY
    if is_tooling_path(path):
        return W.TOOLING_PENALTY
    return 1.0


def prior(
    kind: str,
    name: str,
    words: Forms,
    terms: Forms,
    place: float,
    vendored: bool,
) -> float:
    """Name evidence up, unlikely places down (``words`` and ``terms``: the query's); a block
    the query names exactly is exempt from
    the path penalties (asking for ``test_parse_header`` means the test), unless it is a
    module's part, named after its file ("timeout error for http" names ``lib/adapters/http.js``
    and ``test/unit/adapters/http.js`` alike, and means the code). A text window is
    named after its file, whose extension is no name the query gives: "fix(html)" names a
    language, not every ``.html`` fixture under ``tests/``."""
    factor = 1.0 + W.NAME_COVERAGE_WEIGHT * name_match(name, terms)
    if kind != "text" and words.meets(name):
        factor *= W.NAME_MATCH_BOOST
        # a module's part is named after its file: its place still counts; and so does a
        # one-word name's in a test among more words ("empty", "after": JUnit's methods)
        if kind != "module" and (place == 1.0 or _names_the_place(name, words)):
            return factor
    factor *= place  # x 1.0 changes no float
    if vendored:
        factor *= W.VENDOR_PENALTY
    if kind == "text":
        factor *= W.TEXT_WINDOW_PENALTY
    return factor


def _names_the_place(name: str, words: Forms) -> bool:
    """Whether a test's (example's) name the query gives says it wants that test: a name of
    two words or more (``test_parse_header``, ``requestBody``), or any name asked for alone.
    JUnit's and NUnit's test methods need no ``test`` in their names, and a common word of a
    longer query ("empty", "after", "handle") names one in every test class."""
    if not words.several or not W.ONE_WORD_TEST_NAMES_KEEP_PENALTY:
        return True
    return any(len(split_cached(n)) > 1 for n in short_names(name))


def named_files(query: str) -> frozenset[str]:
    """File stems the query names: its identifiers of two parts or more (``StandbyTask``,
    ``use_strict_mode``), lower-cased. A Java class, a TypeScript class, a Rust module is
    usually the file of its name; a plain word ("consumer") names no file."""
    out: set[str] = set()
    for word in query_words(query):
        parts = split_cached(word)
        if len(parts) > 1:
            out.add(word.lower())
            out.add("_".join(parts))
    if W.MEMBER_OWNER_NAMES_FILE:
        out.update(m.lower() for m in _MEMBER_OWNER.findall(query))
    return frozenset(out)


@lru_cache(maxsize=65536)  # asked for every candidate of every search
def file_stem(path: str) -> str:
    """``src/main/java/StandbyTask.java`` -> ``standbytask`` (the name before any dot)."""
    return path.rsplit("/", 1)[-1].split(".", 1)[0].lower()


def generated_files(conn: sqlite3.Connection, paths: list[str]) -> set[str]:
    """The ``paths`` whose first lines say a generator wrote them (their ``files.generated``
    flag, see ``indexer.generated``), or whose name does (``paths.GENERATED_SUFFIXES``)."""
    out = {p for p in paths if is_generated_path(p)}
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        marks = ",".join("?" * len(chunk))
        out.update(
            path
            for (path,) in conn.execute(
                f"SELECT path FROM files WHERE path IN ({marks}) AND generated", chunk
            )
        )
    return out
