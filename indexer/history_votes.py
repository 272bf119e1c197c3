"""The search's history step: similar earlier commits vote for the source files they changed,
and the files changed most in the newest commits get a little credit (what ``history``
recorded; ``ranking`` adds both to the fused scores).

Only commits scoring at least half the best one vote, each with (its score / the best's)
squared; a file every commit touches says little, so a file's share is divided by the squared
log of how many recorded commits touched it. Searches on the index's writer connection keep
what an edit does not change across searches (``search_cache.Symbols``).
"""

from __future__ import annotations

import math
import sqlite3
from collections import defaultdict

from indexer import weights as W
from indexer.paths import is_example_path, is_test_path
from indexer.search_cache import HistoryMemo, Symbols
from indexer.structure import is_tooling_path
from indexer.tokens import fts_match, rarest_within, vocabulary_term


def file_scores(
    conn: sqlite3.Connection,
    terms: list[str],
    paths: set[str],
    memo: HistoryMemo | None = None,
    kept: Symbols | None = None,
) -> dict[str, float]:
    """Evidence from similar earlier commits for each of ``paths`` (source files only), scaled
    so the best file has 1.0; empty when no recorded commit shares a word with the query.
    ``memo`` (kept for the recorded history) spares the per-term work of earlier searches;
    ``kept``, the indexed files each commit touched (see ``_touched_files``)."""
    if not terms or not paths:
        return {}
    try:
        selected = _selective(conn, terms, memo)
        similar = memo.similar(conn, selected, W.HISTORY_SIMILAR_COMMITS) if memo else None
        if similar is None:
            similar = conn.execute(
                "SELECT rowid, -bm25(commits_fts) FROM commits_fts WHERE commits_fts MATCH ? "
                "ORDER BY bm25(commits_fts) LIMIT ?",
                (fts_match(selected), W.HISTORY_SIMILAR_COMMITS),
            ).fetchall()
    except sqlite3.OperationalError:  # an index written before the history tables
        return {}
    if not similar:
        return {}
    floor = similar[0][1] * W.HISTORY_VOTE_CUTOFF  # a commit sharing one common word is no peer
    similar = [(commit_id, s) for commit_id, s in similar if s >= floor]
    strength = dict(similar)
    touched = _touched_files(conn, [commit_id for commit_id, _ in similar], kept)
    wanted = {
        path
        for changed in touched.values()
        for path, language in changed
        if path in paths
        and language != "text"
        and not is_test_path(path)
        and not is_example_path(path)
        and not is_tooling_path(path)
    }
    if not wanted:
        return {}
    churn = _churn(conn, wanted, memo)
    scores: dict[str, float] = defaultdict(float)
    best = similar[0][1]
    for commit_id, changed in touched.items():
        vote = (strength[commit_id] / best) ** W.HISTORY_SIMILARITY_POWER / len(changed)
        for path, _ in changed:  # shared among the commit's files that are still indexed
            if path in wanted:
                scores[path] += vote / math.log(2 + churn[path]) ** W.HISTORY_CHURN_POWER
    top = max(scores.values(), default=0.0)
    return {p: s / top for p, s in scores.items()} if top > 0 else {}


def _touched_files(
    conn: sqlite3.Connection, ids: list[int], kept: Symbols | None
) -> dict[int, list[tuple[str, str]]]:
    """commit id -> (path, language) of the indexed files (with blocks) it touched, commits in
    id order and paths in order within each, as SQLite reads them (the votes are added up in
    that order). ``kept`` holds them across searches on the writer's connection: only a write
    that is not a splice (which clears it) changes which files have blocks."""
    known = kept.commits if kept is not None else {}
    missing = sorted(set(ids) - known.keys())
    if missing:
        found: dict[int, list[tuple[str, str]]] = {commit_id: [] for commit_id in missing}
        marks = ",".join("?" * len(missing))
        for commit_id, path, language in conn.execute(
            "SELECT c.commit_id, c.path, f.language FROM commit_files c JOIN files f"
            f" ON f.path = c.path WHERE f.blocks > 0 AND c.commit_id IN ({marks})"
            " ORDER BY c.commit_id, c.path",
            missing,
        ):
            found[commit_id].append((path, language))
        known.update(found)
    return {commit_id: known[commit_id] for commit_id in sorted(set(ids)) if known[commit_id]}


def _churn(conn: sqlite3.Connection, paths: set[str], memo: HistoryMemo | None) -> dict[str, int]:
    """path -> recorded commits touching it (kept in ``memo``: it changes with the history)."""
    known = memo.churn if memo is not None else {}
    missing = sorted(p for p in paths if p not in known)
    if missing:
        marks = ",".join("?" * len(missing))
        found = dict.fromkeys(missing, 0)
        found.update(
            conn.execute(
                f"SELECT path, count(*) FROM commit_files WHERE path IN ({marks}) GROUP BY path",
                missing,
            )
        )
        known.update(found)
    return {p: known[p] for p in paths}


def _selective(
    conn: sqlite3.Connection, terms: list[str], memo: HistoryMemo | None = None
) -> list[str]:
    """The query's terms, rarest first, while the commits they match stay within
    ``HISTORY_MATCH_BUDGET``: scoring every commit that says "fix" costs milliseconds and BM25
    gives such words almost no weight."""
    known = memo.counts if memo is not None else {}
    for term in terms:
        if term not in known:
            token = vocabulary_term(term)
            row = None
            if token is not None:  # a phrase matches no vocabulary row
                row = conn.execute(
                    "SELECT doc FROM commits_vocab WHERE term = ?", (token,)
                ).fetchone()
            known[term] = row[0] if row else 0
    return rarest_within(terms, {t: known[t] for t in terms}, W.HISTORY_MATCH_BUDGET)[0]


def recent_activity(
    conn: sqlite3.Connection,
    paths: set[str],
    memo: HistoryMemo | None = None,
    kept: Symbols | None = None,
) -> dict[str, float]:
    """How busy each of ``paths`` (source files only) was in the newest recorded commits:
    log(1 + commits touching it) among the last ``RECENCY_COMMITS``, scaled so the busiest
    has 1.0. Code that is being worked on is where the next fix tends to go. ``kept``: which
    paths are indexed source files, kept as ``_touched_files`` keeps its rows."""
    if not paths:
        return {}
    try:
        if memo is not None:  # the newest commits' files are kept; only the files are asked
            recent = memo.recent(conn)
            busy = sorted(p for p in paths if p in recent)
            sources = kept.sources if kept is not None else {}
            missing = [p for p in busy if p not in sources]
            if missing:
                marks = ",".join("?" * len(missing))
                found = dict.fromkeys(missing, False)
                found.update(
                    (p, True)
                    for (p,) in conn.execute(
                        f"SELECT path FROM files WHERE language != 'text' AND path IN ({marks})",
                        missing,
                    )
                )
                sources.update(found)
            rows = [(p, recent[p]) for p in busy if sources[p]]
        else:
            marks = ",".join("?" * len(paths))
            rows = conn.execute(
                "SELECT c.path, count(*) FROM commit_files c JOIN files f ON f.path = c.path "
                "WHERE c.commit_id > (SELECT COALESCE(MAX(id), 0) FROM commits) - ? "
                f"AND c.path IN ({marks}) AND f.language != 'text' GROUP BY c.path",
                [W.RECENCY_COMMITS, *sorted(paths)],
            ).fetchall()
    except sqlite3.OperationalError:  # an index written before the history tables
        return {}
    counts = {
        p: n
        for p, n in rows
        if not is_test_path(p) and not is_example_path(p) and not is_tooling_path(p)
    }
    top = max(counts.values(), default=0)
    return {p: math.log1p(n) / math.log1p(top) for p, n in counts.items()} if top else {}
