"""Buffer text typed and not yet in the index: the newest text per file, debounced.

Typing sends a change per key, so ``IndexSync`` keeps each edited buffer's newest text here and
indexes it once the file has been quiet for ``DEBOUNCE_SECONDS``; a reader that must see it
sooner (a search) takes every text waiting at once and writes it first. The texts are read by
any thread that flushes, under the owner's lock; the timers live on the event loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

DEBOUNCE_SECONDS = 0.3


class PendingBuffers:
    """Each buffer's newest text waiting for the index, and the timer that hands it over."""

    def __init__(self, lock: threading.Lock, index: Callable[[Path, str], object]) -> None:
        self._lock = lock  # the owner's lock: any thread that flushes takes the texts
        self._index = index  # on the event loop: index this text of the file now
        self._texts: dict[Path, str] = {}
        self._timers: dict[Path, asyncio.TimerHandle] = {}

    def __len__(self) -> int:
        return len(self._texts)

    def changed(self, path: Path, text: str) -> None:
        """Keep ``text`` as the file's newest, and (re)start its quiet-time timer."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self._texts[path] = text
        handle = self._timers.pop(path, None)
        if handle is not None:
            handle.cancel()

        def fire() -> None:
            self._timers.pop(path, None)
            with self._lock:
                waiting = self._texts.pop(path, None)
            if waiting is not None:
                self._index(path, waiting)

        self._timers[path] = loop.call_later(DEBOUNCE_SECONDS, fire)

    def forget(self, path: Path) -> None:
        """The buffer closed: its text waiting is dropped, never indexed."""
        handle = self._timers.pop(path, None)
        if handle is not None:
            handle.cancel()
        with self._lock:
            self._texts.pop(path, None)

    def take(self) -> list[tuple[Path, str]]:
        """Every text waiting, for the caller to write now (their timers then find nothing)."""
        with self._lock:
            items = list(self._texts.items())
            self._texts.clear()
        return items

    def cancel(self) -> None:
        """The server is closing: no timer fires, nothing waits."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._texts.clear()
