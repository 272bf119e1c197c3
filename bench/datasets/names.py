"""The names set: navigational queries, the way an agent or a person looks for a known thing.

A public function, method or class whose name splits into two or three words
(``resolve_redirects``, ``HTTPAdapter``) is queried by those words ("resolve redirects",
"http adapter"); the relevant file is the one defining it. Names defined in more than one file
are skipped (there is no single answer). Definitions are found with Python's ``ast``, not with
the index under test, and only in library code (the history set's notion of source).

The corpus is the repository at ``HEAD``, checked out in a private ``git clone --shared`` (the
user's clone is only read), so an index there sees the whole history before ``HEAD``: the set
shows what the history signal costs or brings on queries that are not bug reports.
"""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

from bench.datasets import DatasetError, Query, Target
from bench.datasets.history import Snapshot, _git, is_source

_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def words(name: str) -> list[str]:
    """``resolve_redirects`` -> ``["resolve", "redirects"]``, ``HTTPAdapter`` -> ``["http", "adapter"]``."""
    return [p.lower() for piece in name.split("_") for p in _PARTS.findall(piece)]


def definitions(root: Path, rel: str) -> list[tuple[str, Target]]:
    """Public top-level functions and classes of one file, and the public methods of its
    public classes, with their spans."""
    try:
        tree = ast.parse((root / rel).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return []
    found = []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in tree.body:
        if not isinstance(node, kinds) or node.name.startswith("_"):
            continue
        inner = node.body if isinstance(node, ast.ClassDef) else []
        for item in [node, *inner]:
            if isinstance(item, kinds) and not item.name.startswith("_"):
                start = min([d.lineno for d in item.decorator_list] + [item.lineno])
                end = item.end_lineno or item.lineno
                found.append((item.name, Target(rel, item.lineno, start, end)))
    return found


def build(repo: Path, root: Path, *, queries: int = 200, seed: int = 1) -> list[Query]:
    """Check ``repo``'s ``HEAD`` out at ``root`` and return up to ``queries`` name queries."""
    snap = Snapshot(repo, root)
    head = _git(repo, "rev-parse", "HEAD").strip()
    snap.goto(head)
    by_phrase: dict[str, list[Target]] = {}
    for rel in sorted(snap.blobs()):
        if not is_source(rel):
            continue
        for name, target in definitions(root, rel):
            parts = words(name)
            if 2 <= len(parts) <= 3:
                by_phrase.setdefault(" ".join(parts), []).append(target)
    unique = sorted(p for p, ts in by_phrase.items() if len({t.path for t in ts}) == 1)
    if not unique:
        raise DatasetError(f"no two- or three-word public names found in {repo}")
    random.Random(seed).shuffle(unique)
    return [
        Query(
            f"{by_phrase[p][0].path}:{by_phrase[p][0].line}",
            p,
            frozenset({by_phrase[p][0].path}),
            tuple(by_phrase[p]),
        )
        for p in unique[:queries]
    ]
