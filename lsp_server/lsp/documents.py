"""The code index kept in step with what the user sees (``IndexSync``).

The agent reads what is in the editor, saved or not (``document_lookup`` finds a path among the
synced documents before anyone touches the disk), and the index follows the same text: didOpen /
didChange feed ``Index.update_file`` with the buffer (debounced per file: ``pending_buffers``),
disk changes arrive from watchdog and ``workspace/didChangeWatchedFiles``. All index work runs
in one worker thread (``index_thread``) so parsing never blocks the server's event loop and
writes never race. A write another process kept the index locked for is kept and tried again
(``RETRY_SECONDS`` on, and before the next search), never dropped; so is one that found the
disk full (``locked_writes``). Once the buffers are quiet, the segments their edits left are
merged (``quiet_merge``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lsp_server.lsp.index_thread import IndexThread
from lsp_server.lsp.locked_writes import RETRY_MAX_SECONDS, RETRY_SECONDS, LockedWrites
from lsp_server.lsp.pending_buffers import PendingBuffers
from lsp_server.lsp.quiet_merge import QuietMerge

log = logging.getLogger("kiln.lsp.documents")


class IndexSync:
    """Owns the workspace ``Index``; every call that parses or writes runs off the event loop."""

    def __init__(self, root: Path, *, enabled: bool = True) -> None:
        self.root = root
        self.enabled = enabled
        self.index: Any = None
        self.state = "idle"  # idle | indexing | ready | unavailable
        self.error = ""
        self.progress = (0, 0)
        self.last_stats: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._thread = IndexThread(self._lock)  # every job that parses or writes, in order
        # Searches after a flush (``flush_then``), handed over by the index thread itself.
        self._searches = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kiln-search")
        # Buffer text not yet in the index (debounced); read by any thread that flushes.
        self._pending = PendingBuffers(self._lock, self._index_later)
        # Writes the index was locked for; only the index thread adds or removes one, except a
        # closed buffer's (``forget_buffer``).
        self._retry = LockedWrites(self._lock, self._submit_retries)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watcher: Any = None
        self._quiet = QuietMerge(self._merge_step, lambda: bool(self._pending))
        self.merged = self._quiet.merged  # set when an idle merge has run (cleared by an edit)
        self._said: set[str] = set()  # skipped files logged already
        # Set by ``close``: a scan still running stops at its next file (the batches it
        # committed stay; the next start resumes from them) instead of keeping the process
        # alive after `exit` until it has read the whole tree.
        self._closing = threading.Event()

    async def open(self) -> Any:
        """Create the index (cheap); None when the indexer is unavailable here."""
        if not self.enabled:
            self.state = "unavailable"
            self.error = "indexing disabled by initializationOptions"
            return None
        from indexer import Index  # tree-sitter loads only when indexing starts

        # opening can meet another process's write lock too (a `kiln index` migrating it, or
        # recovering its journal): wait for it as a scan does, "indexing" from here on
        self.state = "indexing"
        opened, index = await self._waiting("index unavailable", Index, self.root)
        if opened:
            self.index = index
        return self.index

    async def initial_update(self, report: Callable[[int, int, str], None]) -> dict[str, Any]:
        """First full scan; ``report(done, total, path)`` is called from the worker thread."""
        if self.index is None:
            return {}
        self.state = "indexing"

        def progress(done: int, total: int, rel: str) -> None:
            if self._closing.is_set():
                raise ScanStopped("the server is shutting down")
            self.progress = (done, total)
            report(done, total, rel)

        # another process writing the index (a `kiln index`), a full disk: wait
        done, stats = await self._waiting("indexing failed", self.index.update, progress)
        if not done:
            return {}
        self.state, self.error = "ready", ""
        self.last_stats = _stats_dict(stats)
        self._say_skipped(stats.skipped)
        return self.last_stats

    async def _waiting(self, failed: str, fn: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
        """``(True, fn(*args))`` run on the index thread, waiting out a retryable failure (a
        lock another process holds, a full disk: every ``RETRY_SECONDS``, doubling up to
        ``RETRY_MAX_SECONDS``); ``(False, None)`` once one is not retryable, the index then
        unavailable and ``failed`` logged with why."""
        from indexer import IndexerError

        pause = RETRY_SECONDS
        while True:
            try:
                return True, await self._thread.run(fn, *args)
            except (ScanStopped, CancelledError):  # closed meanwhile: nothing to say
                return False, None
            except Exception as exc:  # noqa: BLE001 - a broken index must not stop the server
                if not (isinstance(exc, IndexerError) and exc.retryable):
                    self.state, self.error = "unavailable", f"{type(exc).__name__}: {exc}"
                    log.warning("%s: %s", failed, self.error)
                    return False, None
                if self.error != str(exc):
                    log.info("%s; indexing goes on once that changes", exc)
                self.state, self.error = "indexing", str(exc)
                await asyncio.sleep(pause)
                pause = min(pause * 2, RETRY_MAX_SECONDS)

    def _say_skipped(self, lines: list[str]) -> None:
        """Log each file the index left out (a link out of the tree, a folder it cannot read,
        a file over the cap…) once per session, as `kiln index` prints them: the editor's
        log said nothing, and a search missed them unexplained."""
        from indexer.files import printable

        for line in lines:
            if line not in self._said:
                self._said.add(line)
                log.info("skipped %s", printable(line))

    def start_watching(
        self,
        skip: Callable[[Path], bool] | None = None,
        buffers: Callable[[], list[tuple[Path, str]]] | None = None,
    ) -> None:
        """Watch the disk; ``skip`` names open documents, whose buffers own their index rows;
        ``buffers()`` (on the event loop) lists them with their text: written again once a
        file swapped in or rebuilt is filled, where only their next edit wrote them before."""
        if self.index is None:
            return
        loop = asyncio.get_running_loop()

        def refill() -> None:  # on the watcher's thread, once its full scan is in
            if buffers is not None and not self._closing.is_set():
                try:
                    loop.call_soon_threadsafe(self._write_open, buffers)
                except RuntimeError:  # the loop is closed: the server is gone
                    pass

        try:
            from indexer import watch

            self._watcher = watch(
                self.root,
                lambda paths, stats: self._say_skipped(stats.skipped),
                index=self.index,
                skip=skip,
                on_refill=refill,
            )
        except Exception as exc:  # noqa: BLE001 - watching is an optimisation
            log.warning("file watching unavailable: %s", exc)

    def _write_open(self, buffers: Callable[[], list[tuple[Path, str]]]) -> None:
        """On the event loop: queue each open buffer's text for the index."""
        for path, text in buffers():
            self.queue_update(path, text)

    def buffer_changed(self, path: Path, text: str) -> None:
        """Re-index an edited buffer after a short pause (typing sends a change per key); a
        reader that must see it sooner calls ``flush`` or ``flush_blocking`` first."""
        path = in_root(path)
        if self.index is None or not _inside(self.root, path) or path.is_dir():
            return  # a folder's URI is no file, whatever text the editor holds for it
        self._loop = asyncio.get_running_loop()
        self._pending.changed(path, text)

    def _index_later(self, path: Path, text: str) -> None:
        """From a buffer's quiet-time timer, on the event loop: index the text it waited with."""
        asyncio.get_running_loop().create_task(self.update_file(path, text))

    def forget_buffer(self, path: Path) -> None:
        """The buffer closed: its text waiting for the index is dropped, never indexed."""
        path = in_root(path)
        self._pending.forget(path)
        self._retry.forget_text(path)

    def _write_buffers(self, items: Sequence[tuple[Path, str | None]]) -> None:
        """On the index thread: the writes the index was locked for, then each text (None:
        the disk's), in order."""
        self._write_retries()
        for path, text in items:
            self._write(path, text)

    def _write(self, path: Path, text: str | None) -> int | None:
        """On the index thread: one file's write; None when the index was locked for it or
        the disk full (it is then kept for a retry: ``RETRY_SECONDS`` on, or before the next
        search)."""
        from indexer import IndexerError

        try:
            count = int(self.index.update_file(path, text))
        except IndexerError as exc:
            if not exc.retryable:
                log.info("index update for %s failed: %s", path, exc)
                return 0
            if self._retry.keep(path, text):
                log.info("%s; %s is kept and written when it can be", exc, path)
            self._retry.later()
            return None
        except Exception as exc:  # noqa: BLE001 - the index is a cache
            log.info("index update for %s failed: %s", path, exc)
            count = 0
        self._retry.written(path)
        return count

    def _write_retries(self) -> None:
        """On the index thread: the writes waiting for the lock, until one still finds it held
        (each try waits the busy timeout: the rest would wait as long for nothing)."""
        for path, text in self._retry.waiting():
            if self._write(path, text) is None:
                return

    def _submit_retries(self) -> None:
        """From the retry timer: the waiting writes, queued on the index thread."""
        try:
            self._thread.submit(self._write_retries)
        except RuntimeError:  # the server is closing
            pass

    async def flush(self) -> None:
        """Bring every buffer typed into the index now (and wait for updates already queued),
        so a search sees what the editor shows; not while the first scan holds the index."""
        if self.index is None or self.state != "ready":
            return
        items = self._pending.take()
        await self._thread.run(self._write_buffers, items)
        if items:
            self._quiet.restart()

    async def flush_then(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``await flush()`` then ``await asyncio.to_thread(fn, *args)``, with the index thread
        handing ``fn`` to a search thread itself: the event loop wakes once, for the answer,
        not also between the write and the search (on a busy machine each wake-up of a thread
        may wait milliseconds for a CPU), and with nothing typed or queued for the index
        thread, ``fn`` starts at once. ``fn`` runs on a thread of its own, not on the index
        thread: see ``features.hover``."""
        answer: Future[Any] = Future()

        def search() -> None:
            if answer.set_running_or_notify_cancel():  # else the request was cancelled
                try:
                    answer.set_result(fn(*args))
                except BaseException as exc:  # noqa: BLE001 - the awaiting request raises it
                    answer.set_exception(exc)

        def written(write: Future[Any]) -> None:  # on the index thread
            if answer.cancelled():  # the request was cancelled meanwhile
                return
            if write.cancelled() or write.exception() is not None:  # closing, or a failure
                _copy_outcome(write, answer)
                return
            try:
                self._searches.submit(search)
            except RuntimeError as exc:  # the server is closing
                answer.set_exception(exc)

        ready = self.index is not None and self.state == "ready"
        items = self._pending.take() if ready else []
        with self._lock:
            waiting = self._thread.queued or self._retry  # work the search must come after
        if ready and (items or waiting):
            self._thread.submit(self._write_buffers, items).add_done_callback(written)
        else:  # nothing to write first (or nothing to write into): no stop on the index thread
            self._searches.submit(search)
        result = await asyncio.wrap_future(answer)
        if items:
            self._quiet.restart()
        return result

    def flush_blocking(self) -> None:
        """``flush`` for a worker thread (the agent's tools search off the event loop)."""
        if self.index is None or self.state != "ready":
            return
        items = self._pending.take()
        try:
            self._thread.submit(self._write_buffers, items).result()
        except (RuntimeError, CancelledError):  # the server is closing: search what is there
            return
        if items and self._loop is not None:
            self._loop.call_soon_threadsafe(self._quiet.restart)

    def queue_update(self, path: Path, text: str | None = None) -> None:
        """Queue a re-index (of ``text``, else of the disk) behind what is already queued,
        without waiting: a notification handler's order is the order the index sees."""
        path = in_root(path)
        if self.index is None or not _inside(self.root, path):
            return
        if text is None or not path.is_dir():
            self._thread.submit(self._write_buffers, [(path, text)])
            self._quiet.restart()

    async def update_file(self, path: Path, text: str | None = None) -> int:
        path = in_root(path)
        if self.index is None or not _inside(self.root, path):
            return 0
        count = await self._thread.run(self._write, path, text)
        if count is None:  # the index is locked: written on a retry
            return 0
        self._quiet.restart()
        return count

    async def _merge_step(self) -> Any:
        """One bounded step of the quiet-time merge, on the index thread (falsy: nothing left)."""
        return await self._thread.run(lambda: self.index.compact(small_only=True))

    async def status(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "state": self.state,
            "root": str(self.root),
            "progress": {"done": self.progress[0], "total": self.progress[1]},
            "pendingFiles": len(self._pending) + len(self._retry),  # typed, or waiting for a lock
            "watching": self._watcher is not None,
            # the index's own figures; these when there is none (yet), so every key is there
            "files": 0, "blocks": 0, "db_bytes": 0, "last_indexed": None,
            "commits": 0, "history_head": None,
        }  # fmt: skip
        if self.error:
            info["error"] = self.error
        if self.last_stats:
            info["lastUpdate"] = self.last_stats
        if self.index is not None:
            try:
                # A read on its own connection: answers even while a scan holds the writer.
                stats = await asyncio.to_thread(self.index.status)
                info.update({k: v for k, v in stats.items() if k != "root"})
            except Exception as exc:  # noqa: BLE001
                info["error"] = str(exc)
        return info

    def close(self) -> None:
        self._closing.set()
        self._pending.cancel()
        self._retry.cancel()
        self._quiet.cancel()
        if self._watcher is not None:
            try:
                self._watcher.stop()
            except Exception:  # noqa: BLE001
                pass
            self._watcher = None
        self._thread.shutdown()
        self._searches.shutdown(wait=False, cancel_futures=True)


class ScanStopped(Exception):
    """Raised from a scan's progress callback once the server is closing: the scan unwinds
    (its open batch rolled back, its parse workers stopped) instead of running to the end."""


def _copy_outcome(source: Future[Any], target: Future[Any]) -> None:
    """``target`` cancelled, or failed as ``source`` did."""
    if source.cancelled():
        target.cancel()
    else:
        exc = source.exception()
        assert exc is not None
        target.set_exception(exc)


def in_root(path: Path) -> Path:
    """``path`` with the folders on its way resolved (the root is resolved: a client may name
    it through a symbolic link), the file itself kept (a link in the root is its own file)."""
    try:
        return path.parent.resolve() / path.name
    except (OSError, RuntimeError):
        return path


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def _stats_dict(stats: Any) -> dict[str, Any]:
    if hasattr(stats, "to_dict"):
        return dict(stats.to_dict())
    if hasattr(stats, "__dataclass_fields__"):
        from dataclasses import asdict

        return asdict(stats)
    return {"summary": str(stats)}
