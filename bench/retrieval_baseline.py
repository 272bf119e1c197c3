"""The whole-file BM25 baseline the code index has to beat, run in the same process as the index.

Whole files (path + content) are the documents, words come from identifiers split at ``_`` and
camelCase, and scores are Okapi BM25 — the classic "grep with ranking" a block index must improve
on. Documents are cached by a content key so a history run re-reads only files that changed.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

from bench.datasets import Hit

DEPTH = 50

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
STOPWORDS = frozenset(
    {
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
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "when",
        "which",
        "while",
        "will",
        "with",
        "not",
        "no",
    }
)


def tokenize(text: str) -> list[str]:
    """Words of identifiers and prose, split at ``_`` and camelCase, lowercased, no stopwords."""
    out = []
    for ident in _IDENT.findall(text):
        for part in _CAMEL.findall(ident):
            low = part.lower()
            if len(low) > 1 and low not in STOPWORDS:
                out.append(low)
    return out


class WholeFileBM25:
    """Okapi BM25 over whole files (path + content), the baseline the index must beat."""

    name = "bm25-file"
    whole_file = True

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._docs: dict[str, tuple[Counter[str], int]] = {}
        self._cache: dict[str, tuple[Counter[str], int]] = {}
        self._avgdl = 1.0

    def set_corpus(self, files: dict[str, str], root: Path) -> None:
        """``files`` maps path -> content key (a blob id); unchanged keys are not re-read."""
        docs = {}
        for path, key in files.items():
            if key not in self._cache:
                text = (root / path).read_text(encoding="utf-8", errors="replace")
                tokens = tokenize(path) + tokenize(text)
                self._cache[key] = (Counter(tokens), len(tokens))
            docs[path] = self._cache[key]
        self._docs = docs
        self._avgdl = (sum(n for _, n in docs.values()) / len(docs)) if docs else 1.0

    def search(self, query: str, k: int = DEPTH) -> list[Hit]:
        terms = set(tokenize(query))
        n = len(self._docs)
        idf = {}
        for t in terms:
            df = sum(1 for tf, _ in self._docs.values() if t in tf)
            if df:
                idf[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
        scored = []
        for path, (tf, length) in self._docs.items():
            norm = self.k1 * (1 - self.b + self.b * length / self._avgdl)
            s = sum(w * tf[t] * (self.k1 + 1) / (tf[t] + norm) for t, w in idf.items() if t in tf)
            if s > 0:
                scored.append((-s, path))
        scored.sort()
        return [Hit(path, 1, 1) for _, path in scored[:k]]


def python_files(root: Path) -> dict[str, str]:
    """Every .py file under root (keyed by path + mtime, for the stdlib set's one snapshot)."""
    out = {}
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root)
        if ".kiln" not in rel.parts:
            out[rel.as_posix()] = f"{rel.as_posix()}:{p.stat().st_mtime_ns}"
    return out
