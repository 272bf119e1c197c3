"""BM25 ranking of deferred tools, small and fast enough to run on every ``tool_search`` call.

A tool's document is its name split into words (``gh__create_issue`` -> gh, create, issue),
its description and its parameter names, with name words weighted higher because models
phrase queries as actions on objects. Tokens get a light suffix stemmer so "issues",
"creating" and "created" meet "issue" and "create". The index is an inverted index built once
per change of the tool set; a query touches only the postings of its own terms.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

K1 = 1.2
B = 0.75
NAME_WEIGHT = 3
NAMESPACE_WEIGHT = 1
PARAM_WEIGHT = 1
DESCRIPTION_WEIGHT = 1

_CHUNK = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "that",
        "the",
        "this",
        "to",
        "use",
        "used",
        "uses",
        "using",
        "was",
        "we",
        "were",
        "when",
        "which",
        "will",
        "with",
        "you",
        "your",
        "can",
        "should",
        "would",
        "could",
        "do",
        "does",
    ]
)


def _stem(word: str) -> str:
    """Strip the commonest English inflections; deliberately crude and predictable."""
    stem = _strip_suffix(word)
    return stem[:-1] if stem.endswith("e") and len(stem) > 4 else stem  # delete/deleted meet


def _strip_suffix(word: str) -> str:
    if len(word) <= 3:
        return word
    for suffix, repl in (
        ("ies", "y"),
        ("sses", "ss"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix == "es" and not word.endswith(("shes", "ches", "xes", "zes", "sses")):
                return word[:-1]  # "updates" -> "update", not "updat"
            stem = word[: len(word) - len(suffix)] + repl
            if suffix in ("ing", "ed") and len(stem) > 2 and stem[-1] == stem[-2] not in "lsz":
                stem = stem[:-1]  # "mapped" -> "map"
            return stem
    return word


def tokenize(text: str) -> list[str]:
    """Split identifiers and prose into lowercase stemmed words, dropping stop words."""
    words = []
    for chunk in _CHUNK.findall(text):
        parts = _CAMEL.findall(chunk) if chunk.isascii() else [chunk]
        for raw in parts:
            word = raw.lower()
            if word in _STOP:
                continue
            words.append(_stem(word))
    return words


# Verbs people use for the same CRUD action; a query word also matches its synonyms at a
# reduced weight, so "add an index" finds create_index without outranking exact words.
SYNONYM_WEIGHT = 0.5
_SYNONYMS = {
    "add": ("create", "insert"),
    "make": ("create",),
    "new": ("create",),
    "open": ("create",),
    "find": ("search", "list", "lookup"),
    "look": ("search", "get"),
    "show": ("get", "list", "describe"),
    "fetch": ("get",),
    "read": ("get",),
    "remove": ("delete",),
    "erase": ("delete",),
    "edit": ("update",),
    "change": ("update",),
    "modify": ("update",),
    "remind": ("reminder",),
    "send": ("post",),
    "kill": ("terminate", "cancel"),
}
_STEMMED_SYNONYMS: dict[str, tuple[str, ...]] = {}


def expand_query(query: str) -> dict[str, float]:
    """Query terms with weights: 1 for the words given, ``SYNONYM_WEIGHT`` for synonyms."""
    if not _STEMMED_SYNONYMS:
        for word, alts in _SYNONYMS.items():
            _STEMMED_SYNONYMS[_stem(word)] = tuple(_stem(a) for a in alts)
    terms = dict.fromkeys(tokenize(query), 1.0)
    for term in list(terms):
        for alt in _STEMMED_SYNONYMS.get(term, ()):
            terms.setdefault(alt, SYNONYM_WEIGHT)
    return terms


def schema_param_names(schema: dict[str, Any] | None) -> list[str]:
    props = (schema or {}).get("properties")
    return list(props) if isinstance(props, dict) else []


@dataclass(frozen=True)
class SearchDoc:
    """What the ranker needs to know about one tool."""

    name: str
    namespace: str
    description: str
    params: tuple[str, ...] = ()

    def weighted_terms(self) -> Counter[str]:
        terms: Counter[str] = Counter()
        local = self.name.split("__", 1)[-1]
        for token in tokenize(local):
            terms[token] += NAME_WEIGHT
        for token in tokenize(self.namespace):
            terms[token] += NAMESPACE_WEIGHT
        for token in tokenize(self.description):
            terms[token] += DESCRIPTION_WEIGHT
        for param in self.params:
            for token in tokenize(param):
                terms[token] += PARAM_WEIGHT
        return terms


class Bm25Index:
    """Inverted index over ``SearchDoc``s; rebuild by constructing a new one."""

    def __init__(self, docs: Sequence[SearchDoc]) -> None:
        self.docs = list(docs)
        self._postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
        lengths = []
        for i, doc in enumerate(self.docs):
            terms = doc.weighted_terms()
            lengths.append(sum(terms.values()))
            for term, tf in terms.items():
                self._postings[term].append((i, float(tf)))
        n = len(self.docs)
        avg = (sum(lengths) / n) if n else 1.0
        self._norm = [K1 * (1 - B + B * length / avg) for length in lengths]
        self._idf = {
            term: math.log(1 + (n - len(posts) + 0.5) / (len(posts) + 0.5))
            for term, posts in self._postings.items()
        }
        self._by_name = {doc.name.lower(): i for i, doc in enumerate(self.docs)}

    def search(self, query: str, k: int = 5) -> list[tuple[SearchDoc, float]]:
        """Top ``k`` documents with scores, best first; ties broken by name for stability."""
        if k <= 0 or not self.docs:
            return []
        scores: dict[int, float] = defaultdict(float)
        exact = self._by_name.get(query.strip().lower())
        if exact is not None:
            scores[exact] += 1000.0  # the model asked for a tool by its full name
        for term, weight in expand_query(query).items():
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = self._idf[term] * weight
            for i, tf in postings:
                scores[i] += idf * tf * (K1 + 1) / (tf + self._norm[i])
        ranked = sorted(scores.items(), key=lambda item: (-item[1], self.docs[item[0]].name))
        return [(self.docs[i], score) for i, score in ranked[:k] if score > 0]


def build_index(docs: Iterable[SearchDoc]) -> Bm25Index:
    return Bm25Index(list(docs))


TOOL_SEARCH_MANUAL = (
    "Find tools that are available but not loaded yet: tools from skills and MCP servers. "
    "Use it when no loaded tool fits the task (e.g. creating a ticket, querying a database, "
    "posting a message); describe the action and its object in a few words, e.g. "
    '{"query": "create github issue"}. Matching tools become callable right after, by the '
    "qualified names it returns (namespace__tool). Do not use it for files or code in the "
    "workspace: the built-in tools cover those."
)


def render_tool_search_description(namespaces: dict[str, str], max_line: int = 160) -> str:
    """The ``tool_search`` description: the manual plus one line per namespace, sorted.

    Deterministic for a given set of namespaces, so the prompt prefix stays byte-identical.
    """
    lines = [TOOL_SEARCH_MANUAL]
    if namespaces:
        lines.append("Namespaces:")
        for ns in sorted(namespaces):
            desc = " ".join(namespaces[ns].split())
            line = f"- {ns}: {desc}" if desc else f"- {ns}"
            if len(line) > max_line:
                line = line[: max_line - 1].rstrip() + "…"
            lines.append(line)
    else:
        lines.append("Namespaces: none configured.")
    return "\n".join(lines)
