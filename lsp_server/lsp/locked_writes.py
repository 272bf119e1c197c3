"""Index writes waiting to be tried again, and the timer that tries them.

A buffer's text the index was locked for (another process writing it past the busy timeout)
or found the disk full is kept here, the newest text per path, never dropped; a timer hands
the retry back to ``IndexSync``'s index thread ``RETRY_SECONDS`` on, the pause doubling after
each try that fails again up to ``RETRY_MAX_SECONDS``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

# Pause before a write the index was locked for (another process writing it past the busy
# timeout: each try waits that timeout itself) or found the disk full is tried again, doubled
# after each try that fails again up to RETRY_MAX_SECONDS.
RETRY_SECONDS = 1.0
RETRY_MAX_SECONDS = 30.0


class LockedWrites:
    """The writes waiting for the index, newest text per path (None: the disk's text)."""

    def __init__(self, lock: threading.Lock, retry: Callable[[], None]) -> None:
        # The owner's lock, held around every change here: its holder may also read
        # ``bool(self)`` together with its own state (``IndexSync.flush_then``).
        self._lock = lock
        self._retry = retry  # queues ``IndexSync``'s retries on its index thread
        self._texts: dict[Path, str | None] = {}
        self._timer: threading.Timer | None = None
        self._pause = RETRY_SECONDS

    def __len__(self) -> int:
        return len(self._texts)

    def keep(self, path: Path, text: str | None) -> bool:
        """Keep ``text`` for ``path`` (an older one waiting is replaced); True when none was."""
        with self._lock:
            first = path not in self._texts
            self._texts[path] = text  # the newest text: an older one waiting is replaced
        return first

    def written(self, path: Path) -> None:
        """A write of ``path`` reached the index: what waited for it is older."""
        with self._lock:
            self._texts.pop(path, None)  # older than this write
            self._pause = RETRY_SECONDS

    def forget_text(self, path: Path) -> None:
        """A closed buffer's text, never written, goes with it (a disk write stays)."""
        with self._lock:
            if self._texts.get(path) is not None:  # its text, never written: gone with it
                del self._texts[path]

    def waiting(self) -> list[tuple[Path, str | None]]:
        with self._lock:
            return list(self._texts.items())

    def later(self) -> None:
        """Start the retry timer unless one is running; the next pause doubles."""

        def fire() -> None:
            with self._lock:
                self._timer = None
            self._retry()

        with self._lock:
            if self._timer is None:
                self._timer = threading.Timer(self._pause, fire)
                self._timer.daemon = True
                self._timer.start()
                self._pause = min(self._pause * 2, RETRY_MAX_SECONDS)

    def cancel(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
