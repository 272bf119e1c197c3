"""Where earlier commits with the same scope went: the packages a component name stands for.

A scope's words do not always name its folder. In a workspace of a hundred crates,
``fix(inference): …`` is fixed in ``crates/biome_js_type_info/`` as often as in the
``type_inference`` folders of ``biome_module_graph``, ``fix(core)`` in ``biome_service``,
``fix(linter)`` in ``biome_js_analyze``; the word prior (``structure.scope_match``) can only
raise folders that spell the scope. The project's own history says what the scope means:
earlier commits whose subject has the same scope, and the packages their source files lie in.
A candidate in such a package is multiplied by 1 + ``SCOPE_HISTORY_WEIGHT`` x the share of
those commits that touched it (``ranking.search``).

A file's package is the folder before its ``src`` folder (``crates/biome_lsp/src/…`` ->
``crates/biome_lsp``, ``streams/src/main/java/…`` -> ``streams``), else its own folder.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from functools import lru_cache

from indexer import weights as W
from indexer.paths import is_example_path, is_test_path
from indexer.search_cache import HistoryMemo
from indexer.structure import is_tooling_path, scope_text
from indexer.tokens import fts_match

_WORD = re.compile(r"[A-Za-z0-9]+")


@lru_cache(maxsize=65536)  # asked for every candidate of every scoped search
def package_of(path: str) -> str:
    """The folder before the path's first ``src`` folder, else the file's own folder ("" for
    a file at the top)."""
    parts = path.split("/")[:-1]
    if "src" in parts:
        return "/".join(parts[: parts.index("src")])
    return "/".join(parts)


def package_shares(
    conn: sqlite3.Connection, query: str, memo: HistoryMemo | None = None
) -> dict[str, float]:
    """package -> the share of earlier commits with the query's scope that changed a source
    file in it; empty without a scope or with fewer than ``SCOPE_HISTORY_MIN_COMMITS`` such
    commits."""
    scope = scope_text(query)
    if not scope or W.SCOPE_HISTORY_WEIGHT <= 0:
        return {}
    kept = memo.scopes if memo is not None else {}
    if scope not in kept:
        kept[scope] = _shares(conn, scope)
    return kept[scope]


def _shares(conn: sqlite3.Connection, scope: str) -> dict[str, float]:
    words = [w.lower() for w in _WORD.findall(scope)]  # as the commit messages' tokenizer cuts
    if not words:
        return {}
    try:
        rows = conn.execute(
            "SELECT rowid, message FROM commits_fts WHERE commits_fts MATCH ? "
            "ORDER BY rowid DESC LIMIT ?",
            (fts_match(words, "AND"), W.SCOPE_HISTORY_SCAN),
        ).fetchall()
    except sqlite3.OperationalError:  # an index written before the history tables
        return {}
    same = [commit_id for commit_id, message in rows if scope_text(message) == scope]
    if len(same) < W.SCOPE_HISTORY_MIN_COMMITS:
        return {}
    touched: dict[int, set[str]] = {commit_id: set() for commit_id in same}
    marks = ",".join("?" * len(same))
    for commit_id, path in conn.execute(
        "SELECT c.commit_id, c.path FROM commit_files c JOIN files f ON f.path = c.path "
        f"WHERE f.blocks > 0 AND f.language != 'text' AND c.commit_id IN ({marks})",
        same,
    ):
        if not (is_test_path(path) or is_example_path(path) or is_tooling_path(path)):
            touched[commit_id].add(package_of(path))
    counts = Counter(package for packages in touched.values() for package in packages)
    return {package: n / len(same) for package, n in counts.items()}
