"""What searches of one index keep between calls: term document counts, which any write of
blocks drops (this process's, or another's seen through ``PRAGMA data_version``), the history
step's per-term commit scores, which change only when the recorded history does, and symbol
lookups (``Symbols``), which the index's own writes invalidate name by name.

The history step ranks commit messages by BM25 over the query's terms (see ``history``).
FTS5's ``bm25()`` is a sum over the query's phrases, in their order, of a per-phrase share that
depends only on that phrase, the row and table-wide counts; so the score of an ``OR`` of
phrases equals, bit for bit, the same sum of each phrase's single-phrase score. Commit rows
and those counts change only when ``history.finish`` records commits, which moves the recorded
head or the newest commit id: the memo is keyed on both and dropped when either moves. A term
matching more commits than a search may score is not kept (the search asks SQLite as before).
"""

from __future__ import annotations

import heapq
import sqlite3
import threading
from typing import TYPE_CHECKING

from indexer import weights as W
from indexer.block_terms import BlockTerms
from indexer.tokens import fts_match

if TYPE_CHECKING:
    from indexer.store import Touched

MAX_SCORES = 100_000  # (term, commit) scores kept per index; the oldest terms go first


class HistoryMemo:
    """Per-term scores and counts for one recorded history (``key``)."""

    def __init__(self, key: tuple) -> None:
        self.key = key
        self.counts: dict[str, int] = {}  # term -> commit messages containing it
        self.churn: dict[str, int] = {}  # path -> recorded commits touching it
        self.scopes: dict[str, dict[str, float]] = {}  # scope -> its packages (``scope_history``)
        self._scores: dict[str, dict[int, float] | None] = {}  # None: matches too many
        self._kept = 0
        self._recent: dict[str, int] | None = None
        self._lock = threading.Lock()

    def similar(self, conn: sqlite3.Connection, terms: list[str], limit: int) -> list | None:
        """``SELECT rowid, -bm25(commits_fts) ... MATCH <terms OR'd> ORDER BY bm25 LIMIT limit``
        from the per-term scores; None when a term matches too many commits to keep."""
        per_term = []
        for term in terms:
            scores = self._term_scores(conn, term)
            if scores is None:
                return None
            per_term.append(scores)
        matched = [scores for scores in per_term if scores]
        if not matched:
            return []
        total = dict(matched[0])  # 0.0 + share is share
        for scores in matched[1:]:  # in the MATCH's phrase order, as FTS5 sums them
            for rowid in total.keys() & scores.keys():
                total[rowid] += scores[rowid]
            for rowid in scores.keys() - total.keys():
                total[rowid] = scores[rowid]
        # ORDER BY ... LIMIT keeps equal scores in rowid order (the order FTS5 yields rows)
        cut = heapq.nlargest(limit, total.values())[-1]
        top = sorted((-share, rowid) for rowid, share in total.items() if share >= cut)
        return [(rowid, -negated) for negated, rowid in top[:limit]]

    def recent(self, conn: sqlite3.Connection) -> dict[str, int]:
        """path -> commits touching it among the newest ``RECENCY_COMMITS`` recorded."""
        if self._recent is None:
            # ``+path``: read the newest commits by key, not every row in path order (SQLite
            # picks the path index for GROUP BY path: 6 ms on SQLAlchemy's 70,000 rows)
            self._recent = dict(
                conn.execute(
                    "SELECT path, count(*) FROM commit_files WHERE commit_id > "
                    "(SELECT COALESCE(MAX(id), 0) FROM commits) - ? GROUP BY +path",
                    (W.RECENCY_COMMITS,),
                )
            )
        return self._recent

    def _term_scores(self, conn: sqlite3.Connection, term: str) -> dict[int, float] | None:
        if term in self._scores:
            return self._scores[term]
        rows = conn.execute(
            "SELECT rowid, -bm25(commits_fts) FROM commits_fts WHERE commits_fts MATCH ? LIMIT ?",
            (fts_match([term]), W.HISTORY_MATCH_BUDGET + 1),
        ).fetchall()
        scores = dict(rows) if len(rows) <= W.HISTORY_MATCH_BUDGET else None
        with self._lock:
            if self._kept + len(rows) > MAX_SCORES:
                self._scores.clear()
                self._kept = 0
            self._scores[term] = scores
            self._kept += len(rows)
        return scores


class Symbols:
    """Lookups of the symbol graph kept across the searches made on an index's writer
    connection: which blocks define or reference a name (``defs``/``refs``, as many ids as a
    search reads per name), which files a query word names, which indexed files each commit
    touched and which paths are code (the history step), the file of each block (the file
    list's step). A search right after an edit asks the same few dozen names as the one
    before it, and an edit in a function body seldom changes any. On that connection only two
    things change them: the index's own writes, and another connection's commit (another
    process), which moves ``PRAGMA data_version`` and drops everything (``check``). A splice
    says what it wrote before it commits (``store.Touched``: names, rows added, removed or
    rewritten) and only that is dropped; a whole file's write says which rows it wrote but
    not which names (the lookups go, the other blocks stay); any other write, a history read
    included, drops everything (``written``). Used with the writer's lock held, as the writes are."""

    SIZE = 50_000  # names kept; past it the lot is dropped

    def __init__(self) -> None:
        self.ids: dict[tuple[str, str], list[int]] = {}  # (table, name) -> block ids
        self.files: dict[tuple[str, ...], list[tuple[int]]] = {}  # path patterns -> file ids
        self.commits: dict[int, list[tuple[str, str]]] = {}  # commit -> indexed files touched
        self.sources: dict[str, bool] = {}  # path -> an indexed file of code (not text)
        self.block_files: dict[int, int] = {}  # block id -> file id (the file list's step)
        self.blocks = BlockTerms()  # the re-ranking's candidates
        self._version: int | None = None

    def check(self, conn: sqlite3.Connection) -> None:
        """Drop everything if another connection committed since the last check."""
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version or len(self.ids) > self.SIZE:
            self.clear()
            self._version = version

    def written(self, touched: Touched | None) -> None:
        """A write is about to commit, having written ``touched`` (None: anything)."""
        if touched is None:
            self.clear()
            return
        self.blocks.drop(touched.rows)
        if touched.names is None:  # a whole file: its rows are known, its names are not
            self._lookups_clear()
            return
        for name in touched.names:
            self.ids.pop(("defs", name), None)
            self.ids.pop(("refs", name), None)
        for block_id in touched.rows:  # a removed row's id may go to a new block
            self.block_files.pop(block_id, None)

    def clear(self) -> None:
        self._lookups_clear()
        self.blocks.clear()

    def _lookups_clear(self) -> None:
        self.ids.clear()
        self.files.clear()
        self.commits.clear()
        self.sources.clear()
        self.block_files.clear()


class SearchCache:
    """Kept by an ``Index`` across its searches (any thread); ``clear`` after a rebuild."""

    def __init__(self) -> None:
        # term -> blocks containing it: which terms are worth scoring, and their weights when
        # some are left out; forgotten at each write of block rows (``Index._transaction``),
        # and when another connection committed (``counts``). Kept until the next update, the
        # watcher's or an editor's writes of files holding a term left its old count: a search
        # after ten such files were deleted still left out the one block holding it that a
        # fresh index ranked first. Counting again is one vocabulary lookup per query term
        # (under a millisecond even for a common one).
        self.df: dict[str, int] = {}
        # id(connection) -> (connection, its ``PRAGMA data_version`` at its last search)
        self._versions: dict[int, tuple[sqlite3.Connection, int]] = {}
        self._lock = threading.Lock()
        self._history: HistoryMemo | None = None
        self.symbols = Symbols()  # for searches on the writer's connection only

    def counts(self, conn: sqlite3.Connection) -> dict[str, int]:
        """``df`` for a search on ``conn``, forgotten first if another connection committed
        since ``conn``'s last search (or ``conn`` is new here): `kiln index` in a terminal, or
        another ``kiln index --watch``, writes the same file while an editor's session keeps
        its counts. A connection's ``data_version`` moves on every other connection's commit,
        this process's writer's included (those counts went already), never on its own; it is
        comparable only with itself, hence one per connection."""
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        with self._lock:
            seen = self._versions.get(id(conn))
            if seen is None or seen[0] is not conn or seen[1] != version:
                self.forget_counts()
                self._versions[id(conn)] = (conn, version)
            return self.df

    def forget_counts(self) -> None:
        """A new, empty ``df``: a search running on another thread keeps the dict it took (its
        counts stay consistent to its end); clearing that dict in place under it made a term it
        had just counted a KeyError (a rescan during an editor's search answered -32603)."""
        self.df = {}

    def clear(self) -> None:
        self.forget_counts()
        with self._lock:
            self._versions.clear()  # a rebuild closed the connections
        self._history = None
        self.symbols = Symbols()

    def history(self, conn: sqlite3.Connection) -> HistoryMemo | None:
        """The memo for the history ``conn`` sees now (a new one when it has changed); None
        for an index written before the history tables."""
        try:
            key = conn.execute(
                "SELECT (SELECT value FROM meta WHERE key = 'history_head'), "
                "(SELECT MAX(id) FROM commits)"
            ).fetchone()
        except sqlite3.OperationalError:
            return None
        memo = self._history
        if memo is None or memo.key != key:
            memo = self._history = HistoryMemo(key)
        return memo
