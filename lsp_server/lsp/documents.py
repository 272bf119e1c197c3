"""Open documents and the code index, kept in step with what the user sees.

The agent must read what is in the editor, saved or not, so ``read_buffer`` looks a path up among
the synced documents before anyone touches the disk. The index follows the same text: didOpen /
didChange feed ``Index.update_file`` with the buffer (debounced per file), disk changes arrive
from watchdog and ``workspace/didChangeWatchedFiles``. All index work runs in one worker thread
so parsing never blocks the server's event loop and writes never race.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lsp_server.core import uri_to_path

log = logging.getLogger("kiln.lsp.documents")

DEBOUNCE_SECONDS = 0.3
# Quiet time after the last buffer edit before the small full-text segments edits leave are
# merged and the WAL is checkpointed (``Index.compact``): a search probes every segment, so a
# long session of edits would otherwise slow searches down, and merging or checkpointing inside
# an edit would slow the edit.
IDLE_SECONDS = 2.0


def find_document(workspace: Any, path: Path) -> Any | None:
    """The synced text document for ``path`` (URIs differ in escaping, so compare paths)."""
    docs = getattr(workspace, "text_documents", {}) or {}
    uri = path.as_uri()
    doc = docs.get(uri)
    if doc is not None:
        return doc
    target = path.resolve()
    for doc_uri, doc in list(docs.items()):  # may run on the watcher thread
        doc_path = uri_to_path(doc_uri)
        if doc_path is not None and doc_path.resolve() == target:
            return doc
    return None


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
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kiln-index")
        self._pending: dict[Path, asyncio.TimerHandle] = {}
        self._watcher: Any = None
        self._idle: asyncio.TimerHandle | None = None
        self.merged = asyncio.Event()  # set when an idle merge has run (cleared by an edit)

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def open(self) -> Any:
        """Create the index (cheap); None when the indexer is unavailable here."""
        if not self.enabled:
            self.state = "unavailable"
            self.error = "indexing disabled by initializationOptions"
            return None
        from indexer import Index  # imported here: tree-sitter loads only when indexing starts

        try:
            self.index = await self._run(Index, self.root)
        except Exception as exc:  # noqa: BLE001 - a broken index must not stop the server
            self.state, self.error = "unavailable", f"{type(exc).__name__}: {exc}"
            log.warning("index unavailable: %s", self.error)
        return self.index

    async def initial_update(self, report: Callable[[int, int, str], None]) -> dict[str, Any]:
        """First full scan; ``report(done, total, path)`` is called from the worker thread."""
        if self.index is None:
            return {}
        self.state = "indexing"

        def progress(done: int, total: int, rel: str) -> None:
            self.progress = (done, total)
            report(done, total, rel)

        try:
            stats = await self._run(self.index.update, progress)
        except Exception as exc:  # noqa: BLE001
            self.state, self.error = "unavailable", f"{type(exc).__name__}: {exc}"
            log.warning("indexing failed: %s", self.error)
            return {}
        self.state = "ready"
        self.last_stats = _stats_dict(stats)
        return self.last_stats

    def start_watching(self, skip: Callable[[Path], bool] | None = None) -> None:
        """Watch the disk; ``skip`` names open documents, whose buffers own their index rows."""
        if self.index is None:
            return
        try:
            from indexer import watch

            self._watcher = watch(self.root, index=self.index, skip=skip)
        except Exception as exc:  # noqa: BLE001 - watching is an optimisation
            log.warning("file watching unavailable: %s", exc)

    def buffer_changed(self, path: Path, text: str) -> None:
        """Re-index an edited buffer after a short pause (typing sends a change per key)."""
        if self.index is None or not _inside(self.root, path):
            return
        loop = asyncio.get_running_loop()
        handle = self._pending.pop(path, None)
        if handle is not None:
            handle.cancel()

        def fire() -> None:
            self._pending.pop(path, None)
            loop.create_task(self.update_file(path, text))

        self._pending[path] = loop.call_later(DEBOUNCE_SECONDS, fire)

    async def update_file(self, path: Path, text: str | None = None) -> int:
        if self.index is None or not _inside(self.root, path):
            return 0
        try:
            count = int(await self._run(self.index.update_file, path, text))
        except Exception as exc:  # noqa: BLE001 - the index is a cache
            log.info("index update for %s failed: %s", path, exc)
            return 0
        self._when_idle()
        return count

    def _when_idle(self) -> None:
        """(Re)start the quiet-time timer after an edit."""
        loop = asyncio.get_running_loop()
        if self._idle is not None:
            self._idle.cancel()
        self.merged.clear()

        def fire() -> None:
            self._idle = None
            loop.create_task(self._merge_segments())

        self._idle = loop.call_later(IDLE_SECONDS, fire)

    async def _merge_segments(self) -> int:
        """Merge the segments edits left, one bounded step at a time on the index thread,
        stopping as soon as an edit is waiting; returns the steps that did work."""
        steps = 0
        try:
            while not self._pending and self._idle is None:
                if not await self._run(lambda: self.index.compact(small_only=True)):
                    break
                steps += 1
        except Exception as exc:  # noqa: BLE001 - the index is a cache
            log.info("merging index segments failed: %s", exc)
        if self._idle is None:
            self.merged.set()
        return steps

    async def status(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "state": self.state,
            "root": str(self.root),
            "progress": {"done": self.progress[0], "total": self.progress[1]},
            "pendingFiles": len(self._pending),
            "watching": self._watcher is not None,
        }
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
        for handle in self._pending.values():
            handle.cancel()
        self._pending.clear()
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if self._watcher is not None:
            try:
                self._watcher.stop()
            except Exception:  # noqa: BLE001
                pass
            self._watcher = None
        self._pool.shutdown(wait=False, cancel_futures=True)


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
