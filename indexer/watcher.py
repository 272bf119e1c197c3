"""Keep an index fresh from file-system events (watchdog), debounced and batched.

Editors save in bursts (write, rename, chmod), so events are collected until the tree has been
quiet for ``debounce`` seconds and then applied as one batch: changed files re-indexed one by
one, or a full incremental scan when the batch is large or folders moved. Once the tree has been
quiet for ``idle`` seconds after a batch, the small full-text segments the batches left are
merged (``Index.compact``), so searches do not slow down over a long session.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from indexer.errors import IndexerError, IndexLocked, PathOutsideRoot, WatchUnavailable
from indexer.files import bad_name
from indexer.ignores import FOLDER_FILES, ROOT_EXCLUDE
from indexer.index import Index
from indexer.records import IndexStats

DEBOUNCE_SECONDS = 0.3
RETRY_SECONDS = 1.0  # a batch that met a locked index or a full disk is tried again after
RETRY_MAX_SECONDS = 30.0  # ... doubled after each failure up to this
IDLE_SECONDS = 2.0  # quiet time after a batch before the segments it left are merged
FULL_SCAN_OVER = 200  # a batch bigger than this is cheaper as one full incremental scan
# The temporary file of an atomic write by Kiln itself (agent.workspace.atomic_write, as for
# KILN.md; skills_registry.local_state.write_atomically, as for skills-lock.json): renamed
# over its file within the moment, which then reports its own change.
OWN_TEMP = re.compile(r"\..+\.(?:[^./]+\.kiln-tmp|[0-9]+\.[0-9a-f]{8}\.tmp)")
IGNORE_FILES = tuple(f"/{name}" for name in (*FOLDER_FILES, "/".join(ROOT_EXCLUDE)))

OnBatch = Callable[[list[str], IndexStats], None]


class Watcher:
    """A started watchdog observer; use as a context manager or call ``stop()``."""

    def __init__(
        self,
        root: Path | str,
        on_batch: OnBatch | None = None,
        *,
        index: Index | None = None,
        debounce: float = DEBOUNCE_SECONDS,
        skip: Callable[[Path], bool] | None = None,
        idle: float = IDLE_SECONDS,
        on_refill: Callable[[], None] | None = None,
    ) -> None:
        self.index = index or Index(root)
        # Told once the full scan after a swap or rebuild is in: the rows the scan kept for
        # ``skip``'s files were the old file's, so their owner writes them again.
        self.on_refill = on_refill
        self._swaps = 0  # swaps and rebuilds seen (``_swapped``) ...
        self._refilled = 0  # ... and how many of them a finished full scan followed
        self.index.on_swap = self._swapped
        # Files someone else keeps fresh (an editor's open, maybe unsaved, buffers): disk events
        # must not replace what the index holds for them.
        self.skip = skip
        self._own_index = index is None
        self.root = self.index.root
        self.on_batch = on_batch
        self.debounce = debounce
        self.idle = idle
        self.merged = threading.Event()  # set when an idle merge has run (cleared by events)
        self._idle_timer: threading.Timer | None = None
        self.errors: list[str] = []
        self._pending: set[str] = set()
        self._full = False
        self._head_moved = False  # a commit, checkout or reset: the history signal catches up
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._swap_timer: threading.Timer | None = None
        self._retry_pause = RETRY_SECONDS
        self._observer: Any = None

    def start(self) -> Watcher:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                if event.event_type in ("opened", "closed_no_write"):
                    return
                if event.is_directory and event.event_type == "modified":
                    return  # a folder's own mtime: its files report their changes themselves
                paths = [event.src_path, getattr(event, "dest_path", "") or ""]
                watcher._note(
                    [p if isinstance(p, str) else p.decode() for p in paths if p],
                    event.is_directory,
                )

        self._observer = Observer()
        self._observer.schedule(Handler(), str(self.root), recursive=True, **_linux_events())
        self._observer.daemon = True
        try:
            self._observer.start()
        except RecursionError:  # watchdog walks the tree with os.walk, which recurses per level
            raise WatchUnavailable(
                f"cannot watch {self.root}: its folders nest deeper than the watcher can follow"
            ) from None
        return self

    def _note(self, paths: list[str], is_directory: bool) -> None:
        rels = []
        head_moved = False
        for p in paths:
            try:
                rel = Path(p).relative_to(self.root).as_posix()
            except ValueError:
                continue
            if rel in (".git/HEAD", ".git/packed-refs") or rel.startswith(".git/refs/heads/"):
                head_moved = True
                continue
            if rel == ".git/info/exclude":  # an ignore file: a full scan, as for the others
                rels.append(rel)
                continue
            if rel in (".kiln/index.db", ".kiln"):  # moved, copied over, deleted (or written)
                self._index_file_changed()
                continue
            if rel.startswith(".kiln/") or rel == ".kiln" or "/.git/" in f"/{rel}/":
                continue
            if bad_name(rel):  # not UTF-8, too long: the full scan reports it, once
                continue
            if OWN_TEMP.fullmatch(rel.rpartition("/")[2]):
                continue
            rels.append(rel)
        if not rels and not head_moved:
            return
        with self._lock:
            self._head_moved = self._head_moved or head_moved
            if is_directory or any(f"/{r}".endswith(IGNORE_FILES) for r in rels):
                self._full = True
            self._pending.update(rels)
            self._cancel_idle()
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce, self._flush)
            self._timer.daemon = True
            self._timer.start()

    def _index_file_changed(self) -> None:
        """The index file changed on the disk: most often this process's or another Kiln's
        own writes, but a file moved or copied over it (another process's rebuild, a restored
        backup, an empty file) is followed (``Index.check_swap``) and filled again by a full
        scan at once, not at the next change of a source file."""
        with self._lock:
            if self._swap_timer is not None:
                self._swap_timer.cancel()
            self._swap_timer = threading.Timer(self.debounce, self._check_swap)
            self._swap_timer.daemon = True
            self._swap_timer.start()

    def _check_swap(self) -> None:
        with self._lock:
            self._swap_timer = None
        try:
            self.index.check_swap()  # calls ``_swapped`` if it was one
        except Exception as exc:  # noqa: BLE001 - said as a batch's error would be
            self.errors.append(f"{type(exc).__name__}: {exc}")

    def _swapped(self) -> None:
        """The index followed a file swapped in, or rebuilt a damaged one (from any thread: a
        search may be the first to notice): a full scan fills it."""
        with self._lock:
            if self._observer is None:
                return
            self._full = True
            self._swaps += 1
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(0, self._flush)
            self._timer.daemon = True
            self._timer.start()

    def _flush(self) -> None:
        with self._lock:
            batch, full, head_moved = sorted(self._pending), self._full, self._head_moved
            swaps = self._swaps
            self._pending.clear()
            self._full = False
            self._head_moved = False
            self._timer = None
        if not batch and not head_moved and not full:
            return
        try:
            if full or len(batch) > FULL_SCAN_OVER:
                keep = None if self.skip is None else (lambda rel: self.skip(self.root / rel))
                stats = self.index.update(keep=keep)
            else:
                stats = IndexStats(files_seen=len(batch))
                for rel in batch:
                    if self.skip is not None and self.skip(self.root / rel):
                        continue
                    try:
                        if (self.root / rel).is_file():
                            count = self.index.update_file(rel, skipped=stats.skipped)
                            stats.files_indexed += 1
                            stats.blocks += count
                        else:
                            self.index.remove_file(rel)
                            stats.files_removed += 1
                    except PathOutsideRoot as exc:  # a link out of the tree: the rest goes on
                        self.errors.append(str(exc))
                        stats.skipped.append(f"{rel}: the link leads outside the workspace")
                if head_moved:
                    stats.commits = self.index.sync_history()
        except IndexerError as exc:  # its message names the file and what happened
            said = str(exc) if isinstance(exc, IndexLocked) else f"{exc} ({exc.hint})"
            if not exc.retryable:
                self.errors.append(said if exc.hint else str(exc))
                return
            # another process writes (a second watcher, a kiln index), or the disk is full
            if not self.errors or self.errors[-1] != said:  # once, not once per retry
                self.errors.append(said)
            self._retry(batch, full, head_moved)
            return
        except Exception as exc:  # noqa: BLE001 - a watcher thread must survive one bad batch
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return
        with self._lock:
            self._retry_pause = RETRY_SECONDS
            if self._timer is None and self._observer is not None:  # quiet since: wait on
                self._idle_timer = threading.Timer(self.idle, self._merge)
                self._idle_timer.daemon = True
                self._idle_timer.start()
            refilled = full and swaps != self._refilled
            if refilled:
                self._refilled = swaps
        if refilled and self.on_refill is not None:
            self.on_refill()
        if self.on_batch is not None:
            self.on_batch(batch, stats)

    def _retry(self, batch: list[str], full: bool, head_moved: bool) -> None:
        """Put a batch the index was locked for or found no room for back, to be applied
        ``RETRY_SECONDS`` on, twice that after a second failure… (or with the next events):
        it was dropped, and the index kept the old text of its files until they changed
        again."""
        with self._lock:
            self._pending.update(batch)
            self._full = self._full or full
            self._head_moved = self._head_moved or head_moved
            if self._timer is None and self._observer is not None:
                self._timer = threading.Timer(self._retry_pause, self._flush)
                self._timer.daemon = True
                self._timer.start()
                self._retry_pause = min(self._retry_pause * 2, RETRY_MAX_SECONDS)

    def _cancel_idle(self) -> None:
        """An event arrived: no merging until the tree is quiet again (call under the lock)."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        self.merged.clear()

    def _busy(self) -> bool:
        with self._lock:
            return bool(self._pending) or self._timer is not None or self._observer is None

    def _merge(self) -> None:
        """Merge the segments the batches left, one bounded step at a time, stopping as soon as
        new events wait."""
        try:
            while not self._busy() and self.index.compact(small_only=True):
                pass
        except Exception as exc:  # noqa: BLE001 - the index is a cache
            self.errors.append(f"{type(exc).__name__}: {exc}")
        with self._lock:
            if self._idle_timer is threading.current_thread():  # no event since it started
                self._idle_timer = None
                self.merged.set()

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._swap_timer is not None:
                self._swap_timer.cancel()
                self._swap_timer = None
            self._cancel_idle()
        if self._own_index:
            self.index.close()

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _linux_events() -> dict[str, Any]:
    """On Linux, the events asked of inotify: a file counts as changed when its writer closes
    it (``IN_CLOSE_WRITE``: editors, git and tools all do), not at each ``write()`` (SQLite's
    write-ahead log beside the index takes a dozen per edit, each read and dropped by three
    threads of the watcher, the index's own thread waiting for the interpreter meanwhile);
    files opened or closed unwritten are not asked for at all. A change no writer closes
    (``truncate(2)`` on a path, a ``chmod`` alone) waits for the next close or full scan. Other
    systems report as before."""
    if not sys.platform.startswith("linux"):
        return {}
    from watchdog import events as e

    return {
        "event_filter": [
            e.FileClosedEvent, e.FileCreatedEvent, e.DirCreatedEvent, e.FileMovedEvent,
            e.DirMovedEvent, e.FileDeletedEvent, e.DirDeletedEvent,
        ]
    }  # fmt: skip


def watch(
    root: Path | str,
    on_batch: OnBatch | None = None,
    *,
    index: Index | None = None,
    debounce: float = DEBOUNCE_SECONDS,
    skip: Callable[[Path], bool] | None = None,
    idle: float = IDLE_SECONDS,
    on_refill: Callable[[], None] | None = None,
) -> Watcher:
    """Start watching ``root``; returns a started ``Watcher`` (stop it or use ``with``)."""
    return Watcher(
        root, on_batch, index=index, debounce=debounce, skip=skip, idle=idle,
        on_refill=on_refill,
    ).start()  # fmt: skip
