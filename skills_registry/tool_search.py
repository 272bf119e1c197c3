"""Ranking deferred tools for ``tool_search``: SQLite FTS5 with the porter tokenizer and
``bm25()``, the same machinery the code index uses, in an in-memory database per tool set.

A tool's row holds its name split into words (``gh__create_issue`` -> gh create issue), its
namespace, description and parameter names; name words weigh more in ``bm25()`` because models
phrase queries as actions on objects. Porter stemming makes "issues", "creating" and "created"
meet "issue" and "create". Query words are ORed; common synonyms of CRUD verbs count at half
weight through a second ``bm25()`` query; a query that is a tool's full name wins outright.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

NAME_WEIGHT = 3.0
NAMESPACE_WEIGHT = 1.0
DESCRIPTION_WEIGHT = 1.0
PARAM_WEIGHT = 1.0
EXACT_NAME_BONUS = 1000.0

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


def split_words(text: str) -> list[str]:
    """Identifiers and prose as lowercase words: ``gh__createIssue`` -> gh, create, issue."""
    words = []
    for chunk in _CHUNK.findall(text):
        parts = _CAMEL.findall(chunk) if chunk.isascii() else [chunk]
        words += [raw.lower() for raw in parts]
    return words


def tokenize(text: str) -> list[str]:
    """The words of ``text`` minus stop words (stemming is FTS5's porter tokenizer's job)."""
    return [w for w in split_words(text) if w not in _STOP]


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


def expand_query(query: str) -> tuple[list[str], list[str]]:
    """The query's words, and synonyms of them that the query does not already contain."""
    terms = list(dict.fromkeys(tokenize(query)))
    extra = [alt for term in terms for alt in _SYNONYMS.get(term, ()) if alt not in terms]
    return terms, list(dict.fromkeys(extra))


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

    def row(self) -> tuple[str, str, str, str]:
        local = self.name.split("__", 1)[-1]
        return (
            " ".join(split_words(local)),
            " ".join(split_words(self.namespace)),
            self.description,
            " ".join(w for p in self.params for w in split_words(p)),
        )


def _match_expression(words: Sequence[str]) -> str:
    """FTS5 query: each word quoted (so no word is read as an operator), ORed."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


class ToolIndex:
    """An in-memory FTS5 table over ``SearchDoc``s; rebuild by constructing a new one."""

    def __init__(self, docs: Sequence[SearchDoc]) -> None:
        self.docs = list(docs)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE tools USING fts5("
            "name, namespace, description, params, tokenize='porter unicode61')"
        )
        self._db.executemany(
            "INSERT INTO tools(rowid, name, namespace, description, params) VALUES (?, ?, ?, ?, ?)",
            [(i, *doc.row()) for i, doc in enumerate(self.docs)],
        )
        self._by_name = {doc.name.lower(): i for i, doc in enumerate(self.docs)}

    def _bm25(self, words: Sequence[str]) -> dict[int, float]:
        if not words:
            return {}
        rows = self._db.execute(
            "SELECT rowid, bm25(tools, ?, ?, ?, ?) FROM tools WHERE tools MATCH ?",
            (NAME_WEIGHT, NAMESPACE_WEIGHT, DESCRIPTION_WEIGHT, PARAM_WEIGHT,
             _match_expression(words)),
        ).fetchall()  # fmt: skip
        return {int(rowid): -float(score) for rowid, score in rows}  # bm25() is negative

    def search(self, query: str, k: int = 5) -> list[tuple[SearchDoc, float]]:
        """Top ``k`` documents with scores, best first; ties broken by name for stability."""
        if k <= 0 or not self.docs:
            return []
        terms, synonyms = expand_query(query)
        scores: dict[int, float] = defaultdict(float)
        with self._lock:
            for i, score in self._bm25(terms).items():
                scores[i] += score
            for i, score in self._bm25(synonyms).items():
                scores[i] += SYNONYM_WEIGHT * score
        exact = self._by_name.get(query.strip().lower())
        if exact is not None:
            scores[exact] += EXACT_NAME_BONUS  # the model asked for a tool by its full name
        ranked = sorted(scores.items(), key=lambda item: (-item[1], self.docs[item[0]].name))
        return [(self.docs[i], score) for i, score in ranked[:k] if score > 0]


def build_index(docs: Iterable[SearchDoc]) -> ToolIndex:
    return ToolIndex(list(docs))


TOOL_SEARCH_MANUAL = (
    "Find tools that are available but not loaded yet: tools from skills and MCP servers (the "
    "<deferred_tools> block of the context names their sources). Use it when no loaded tool "
    "fits the task (e.g. creating a ticket, querying a database, posting a message); describe "
    'the action and its object in a few words, e.g. {"query": "create github issue"}. The '
    "result gives each match's qualified name (namespace__tool) and input schema. Do not use "
    "it for files or code in the workspace: the built-in tools cover those."
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
