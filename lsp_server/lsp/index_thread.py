"""The index thread: the one worker every parse and write of the code index runs on, in order.

All index work runs on one thread, so parsing never blocks the server's event loop and writes
never race. ``IndexSync`` queues each job here and reads how many are still queued, under its
own lock together with its own state: a search after a flush comes after them, and with none
queued (and nothing typed) it starts at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class IndexThread:
    """One worker thread for the index's jobs, counting those submitted and not done yet."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock  # the owner's lock, held around every change of ``queued``
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kiln-index")
        self.queued = 0  # jobs submitted and not done yet

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.wrap_future(self.submit(fn, *args))

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """``fn(*args)`` queued on the thread, counted in ``queued`` until it is done."""
        with self._lock:
            self.queued += 1
        try:
            job = self._pool.submit(fn, *args)
        except BaseException:
            with self._lock:
                self.queued -= 1
            raise
        job.add_done_callback(self._done)
        return job

    def _done(self, job: Future[Any]) -> None:
        with self._lock:
            self.queued -= 1

    def shutdown(self) -> None:
        """Take no more jobs; those not started yet are cancelled."""
        self._pool.shutdown(wait=False, cancel_futures=True)
