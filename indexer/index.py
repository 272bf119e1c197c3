"""The ``Index``: a workspace's code index, kept fresh incrementally and searched by ranking.

Files are skipped by mtime+size first, then by content hash, so only changed files are
re-parsed. Each file's rows are replaced inside one transaction and transactions commit in
small batches: an interrupted run keeps every finished file and the next run resumes. Writers
share one connection under a lock; a search uses that connection when no write holds the lock
(its page cache survives the index's own commits) and its thread's own connection otherwise,
so searches never wait for an indexing run (WAL mode; the connections: ``database``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from indexer import compact, filelist, history, store
from indexer.database import Database, busy_timeout_setting, is_locked, out_of_space
from indexer.db_location import refuse_links
from indexer.edit_source import edit_source, workspace_path
from indexer.errors import (
    IndexCorrupt,
    IndexFull,
    IndexLocked,
    NotADirectory,
)
from indexer.files import Candidate, excluded, looks_indexable, walk
from indexer.incremental import TreeCache
from indexer.languages import language_of
from indexer.pipeline import digest, prepared
from indexer.ranking import Hit, search
from indexer.rechunk import chunk_edit
from indexer.records import EMPTY, IndexStats, record, skips_said, skips_unread
from indexer.rows import prepare
from indexer.search_cache import SearchCache
from kiln_errors.sqlite_common import is_corrupt

Progress = Callable[[int, int, str], None]
BATCH_SECONDS = 0.5  # commit at least this often during a full run
# A run with this many files to parse writes with synchronous=OFF: SQLite then leaves flushing
# to the OS, so a killed process loses nothing it committed (WAL) and only a power cut could
# damage the file, which the next open detects and rebuilds. Below it, the usual NORMAL.
BULK_FILES = 256
# WAL pages after which a commit checkpoints: SQLite's default during full updates; in an
# editor session (``update_file``) far more, since ``compact``, the idle step, checkpoints
# instead: a checkpoint inside an edit's commit cost that edit ~12 ms CPU on SQLAlchemy.
# Still a bound: ~16 MB of WAL if edits never pause.
BULK_CHECKPOINT_PAGES = 1000
EDIT_CHECKPOINT_PAGES = 4000


class Index:
    """A workspace's index at ``<root>/.kiln/index.db`` (created, migrated or rebuilt on open;
    with ``read_only``, an index on a read-only disk, searched as it is)."""

    def __init__(
        self, root: Path | str, *, busy_timeout: float | None = None, read_only: bool = False
    ) -> None:
        self.root = Path(root).expanduser().resolve()
        if not self.root.is_dir():
            raise NotADirectory(f"not a folder: {root}")
        self.db_path = self.root / ".kiln" / "index.db"
        self.busy_timeout = busy_timeout_setting() if busy_timeout is None else busy_timeout
        self._damaged: str | None = None  # set when a search met a damaged page
        self._trees = TreeCache()  # recently edited files re-parse incrementally
        self._cache = SearchCache()  # what searches reuse (see search_cache)
        self.on_swap: Callable[[], None] | None = None  # told under the write lock: be quick
        refuse_links(self.root, self.db_path)
        self._db = Database(
            self.db_path, self.busy_timeout, read_only=read_only, on_swap=self._forget
        )

    @property
    def recovered(self) -> str | None:
        """Set when a corrupt index.db was rebuilt (on open, or by ``rebuild``)."""
        return self._db.recovered

    @property
    def _conn(self) -> sqlite3.Connection:
        self._db.follow_swap()  # a file swapped in: every connection moves to it
        return self._db.writer

    def _reader(self) -> sqlite3.Connection:
        return self._db.reader()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction. Before it commits, the symbol lookups kept for searches
        (``SearchCache.symbols``) lose the names the body says it wrote in ``_touched`` (a
        splice, under the same lock), or all of them if it said nothing; and the term counts
        go if it wrote any block row (``SearchCache.df``: an editor's or the watcher's writes
        too, not only ``update``'s)."""
        with self._db.transaction() as conn:
            self._touched: store.Touched | None = None
            yield conn
            self._cache.symbols.written(self._touched)
            if self._touched is None or self._touched.rows:
                self._cache.forget_counts()

    def check_swap(self) -> bool:
        """Follow a file moved or copied over the index (``Database.follow_swap``) now, not at
        the next search or write; True when it was one (the caller then fills it again)."""
        return self._db.follow_swap()

    def rebuild(self, reason: str) -> None:
        """Set a damaged index.db aside and start an empty one (the next update refills it)."""
        with self._db.lock:
            self._db.rebuild(reason)
            self._forget()

    def _forget(self) -> None:
        """What searches and edits keep of the file's rows, after a rebuild or a swap; then
        ``on_swap`` (the watcher fills the file now there at once)."""
        self._cache.clear()
        self._trees = TreeCache()
        self._damaged = None
        if self.on_swap is not None:
            self.on_swap()

    def update(
        self, progress: Progress | None = None, *, keep: Callable[[str], bool] | None = None
    ) -> IndexStats:
        """Bring the index in line with the disk; only new or changed files are parsed.
        ``keep(rel)`` True leaves a file's rows as they are (an open buffer's unsaved text),
        whether the disk holds the file or not (a buffer never saved, a file deleted under it).
        A database found damaged (here, or by an earlier search) is rebuilt first."""
        if self._damaged is not None:
            self.rebuild(self._damaged)
        try:
            return self._update(progress, keep)
        except sqlite3.DatabaseError as exc:
            if out_of_space(exc):  # the batches committed so far are kept: the next run resumes
                raise IndexFull(f"cannot write {self.db_path}: {exc}") from exc
            if not is_corrupt(exc):
                raise
            self.rebuild(str(exc))
            return self._update(progress, keep)

    def _update(self, progress: Progress | None, keep: Callable[[str], bool] | None) -> IndexStats:
        started = time.perf_counter()
        self._db.autocheckpoint(BULK_CHECKPOINT_PAGES)
        stats = IndexStats()
        known = {
            row[0]: (row[1], row[2], row[3])
            for row in self._conn.execute("SELECT path, mtime_ns, size, hash FROM files")
        }
        candidates = list(walk(self.root, stats.skipped))
        stats.files_seen = len(candidates)
        seen = {c.rel for c in candidates}
        work: list[Candidate] = []
        done = 0
        unread: set[str] = set()
        for cand in candidates:
            old = known.get(cand.rel)
            unchanged = old is not None and old[0] == cand.mtime_ns and old[1] == cand.size
            if unchanged:
                unread.add(cand.rel)
            if unchanged or (keep is not None and old is not None and keep(cand.rel)):
                done += 1
                if progress is not None:
                    progress(done, len(candidates), cand.rel)
                continue
            work.append(cand)
        stats.skipped += skips_unread(self._conn, unread)  # said again, or counted as before
        by_rel = {c.rel: c for c in work}
        reading = self._start_history(stats.skipped)  # git lists commits while the files are parsed
        bulk = len(work) >= BULK_FILES
        if bulk:  # see BULK_FILES: a killed run loses nothing it committed
            self._db.pragma("synchronous=OFF")
        results = prepared(work, {r: known[r][2] for r in by_rel if r in known}, str(self.root))
        finished = False
        try:
            pending = iter(results)
            while not finished:  # one transaction per batch: an interrupt keeps finished batches
                with self._transaction() as conn:
                    if bulk:  # a segment per batch: merged at the end (see compact)
                        compact.set_crisis(conn, compact.BULK_CRISIS)
                    deadline = time.monotonic() + BATCH_SECONDS
                    for item in pending:
                        record(conn, item, by_rel[item[0]], stats, seen)
                        done += 1
                        if progress is not None:
                            progress(done, len(candidates), item[0])
                        if time.monotonic() > deadline:
                            break
                    else:
                        for rel in known.keys() - seen:
                            if keep is not None and keep(rel):  # an open buffer's file, not
                                continue  # on the disk (not yet saved, or deleted): its rows stay
                            if store.remove_file(conn, rel):
                                stats.files_removed += 1
                        conn.execute(
                            "INSERT OR REPLACE INTO meta VALUES ('last_indexed', ?)",
                            (str(time.time()),),
                        )
                        stats.skipped_before = skips_said(conn, stats.skipped, by_rel.keys())
                        finished = True
                if reading is not None and not finished and reading.done():
                    # git is done before the files: record it while the workers parse on
                    stats.commits = self._finish_history(reading)
                    reading = None
        finally:
            results.close()
            if bulk:
                self._db.pragma("synchronous=NORMAL")
            if reading is not None and not finished:
                reading.close()
        if reading is not None:
            stats.commits = self._finish_history(reading)
        if finished and (bulk or stats.commits >= BULK_FILES):
            while self.compact():  # one segment per FTS table: see indexer/compact.py
                pass
        elif self._reader().execute(f"SELECT 1 FROM {filelist.STALE} LIMIT 1").fetchone():
            with self._transaction() as conn:  # rows an editor session left out of date
                filelist.flush(conn)
        stats.seconds = time.perf_counter() - started
        return stats

    def sync_history(self) -> int:
        """Record the commits new on ``HEAD`` for the history signal (see ``history``); returns
        how many. ``update()`` does it too; the watcher calls it when ``.git`` moves ``HEAD``.
        Having read ``BULK_FILES`` commits or more (a new history, a rewritten one), it merges
        the full-text segments as ``update()`` does: each search of the history probes them."""
        reading = self._start_history()
        added = self._finish_history(reading) if reading is not None else 0
        if added >= BULK_FILES:
            while self.compact():
                pass
        return added

    def _start_history(self, notes: list[str] | None = None) -> history.Reading | None:
        with self._db.lock:
            return history.start(self._conn, self.root, notes)

    def _finish_history(self, reading: history.Reading) -> int:
        with self._db.lock:
            try:
                self._cache.symbols.clear()  # a rebuilt history numbers its commits anew
                return history.finish(self._conn, reading)
            except sqlite3.OperationalError as exc:
                if is_locked(exc):
                    raise IndexLocked(f"{self.db_path} is locked by another process") from exc
                raise
            finally:
                reading.close()

    def compact(self, *, small_only: bool = False) -> bool:
        """One bounded step merging the full-text indexes' segments (all of them, or with
        ``small_only`` those edits left); False once a step found nothing to merge. See
        ``indexer/compact.py``."""
        step = compact.merge_small if small_only else compact.merge_all
        with self._transaction() as conn:
            self._touched = store.Touched()  # none: the file list's rows and FTS segments
            flushed = filelist.flush(conn)  # rows edits left out of date (``filelist.STALE``)
            merged = any([step(conn, table) for table in compact.TABLES])
        with self._db.lock:  # what edits left in the WAL (see EDIT_CHECKPOINT_PAGES)
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return merged or flushed > 0

    def update_file(
        self, path: str | Path, text: str | None = None, skipped: list[str] | None = None
    ) -> int:
        """Re-index one file, from ``text`` (an unsaved buffer) or from disk; returns its block
        count. A file of the disk left out for a reason the user can act on (over the size
        cap, a Git LFS pointer) adds a line to ``skipped``, as ``update`` does. ``IndexFull``
        when the disk has no room for it (nothing of it written)."""
        try:
            return self._update_file(path, text, skipped)
        except sqlite3.DatabaseError as exc:
            if out_of_space(exc):
                raise IndexFull(f"cannot write {self.db_path}: {exc}") from exc
            raise

    def _update_file(self, path: str | Path, text: str | None, skipped: list[str] | None) -> int:
        rel, full = self._rel(path)
        try:
            if excluded(self.root, rel):
                return 0
        except OSError:  # a link swapped in or out while resolved: the next event reads it
            return 0
        source = edit_source(self.root, rel, full, text, skipped)
        if source is None:  # not indexed
            self.remove_file(rel)
            return 0
        data, mtime_ns, size = source
        h = digest(data)
        row = self._conn.execute("SELECT hash, blocks FROM files WHERE path = ?", (rel,)).fetchone()
        if row is not None and row[0] == h:
            if text is None:
                with self._transaction() as conn:
                    conn.execute(
                        "UPDATE files SET mtime_ns=?, size=? WHERE path=?", (mtime_ns, size, rel)
                    )
            elif not self._trees.has(rel) and data and looks_indexable(data):
                chunk_edit(self._trees, rel, data, data_digest=h)  # an opened buffer: the
                # first keystroke then re-chunks one function, not the file
                filelist.prime(self._reader(), rel, h)  # ... and re-counts its words alone
            return int(row[1])
        if not data or not looks_indexable(data):
            with self._transaction() as conn:
                store.write_file(conn, rel, "skipped", mtime_ns, size, h, EMPTY)
            return 0
        language = language_of(rel, data)  # once: the blocks' grammar and the file's row
        blocks, splice = chunk_edit(self._trees, rel, data, language, data_digest=h)
        meta = (language, mtime_ns, size, h)
        self._db.autocheckpoint(EDIT_CHECKPOINT_PAGES)
        with self._transaction() as conn:
            compact.set_crisis(conn, compact.EDIT_CRISIS)  # an edit's small segments: see there
            touched = store.Touched()
            if splice is not None and store.write_splice(
                conn, rel, meta, len(blocks), splice, prepare(rel, splice.blocks), touched
            ):
                self._touched = touched
                return len(blocks)
            known = frozenset(
                r[0]
                for r in conn.execute(
                    "SELECT r.hash FROM block_rows r JOIN files f ON f.id = r.file_id"
                    " WHERE f.path = ?",
                    (rel,),
                )
            )
            whole = store.Touched(names=None)  # the rows it wrote, not the names
            store.write_file(conn, rel, *meta, prepare(rel, blocks, known), whole)
            self._touched = whole
        return len(blocks)

    def remove_file(self, path: str | Path) -> None:
        rel, _ = self._rel(path)
        self._trees.forget(rel)
        with self._transaction() as conn:
            store.remove_file(conn, rel)

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """Ranked blocks for a query; empty when the query has no searchable words. Runs on
        the writer's connection when no write is under way (its page cache survives the
        index's own commits, a reader's does not: ~2 ms CPU of a search right after an edit),
        else on this thread's reader: a search never waits for a write."""
        try:
            with self._db.idle_writer() as writer:
                if writer is not None:
                    return search(writer, query, k, self._cache, self._cache.symbols)
            return search(self._db.reader(), query, k, self._cache)
        except sqlite3.DatabaseError as exc:
            if is_corrupt(exc):
                self._damaged = str(exc)
                raise IndexCorrupt(f"{self.db_path} is damaged ({exc})") from exc
            raise

    def status(self) -> dict[str, Any]:
        try:
            return self._status(self._reader())
        except sqlite3.DatabaseError as exc:  # as in search: the next update rebuilds
            if is_corrupt(exc):
                self._damaged = str(exc)
                raise IndexCorrupt(f"{self.db_path} is damaged ({exc})") from exc
            raise

    def _status(self, conn: sqlite3.Connection) -> dict[str, Any]:
        files, blocks = conn.execute(
            "SELECT count(*), COALESCE(sum(blocks), 0) FROM files"
        ).fetchone()
        last = conn.execute("SELECT value FROM meta WHERE key = 'last_indexed'").fetchone()
        head = conn.execute("SELECT value FROM meta WHERE key = 'history_head'").fetchone()
        commits = conn.execute("SELECT count(*) FROM commits").fetchone()[0]
        size = sum(
            p.stat().st_size for p in (self.db_path, Path(str(self.db_path) + "-wal")) if p.exists()
        )
        return {
            "root": str(self.root),
            "files": files,
            "blocks": blocks,
            "db_bytes": size,
            "last_indexed": float(last[0]) if last else None,
            "commits": commits,  # recorded for the history signal
            "history_head": head[0] if head else None,
        }

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rel(self, path: str | Path) -> tuple[str, Path]:
        return workspace_path(self.root, path)
