"""Merging the small full-text segments buffer edits leave, once the buffers are quiet.

A search probes every segment, so a long session of edits would otherwise slow searches down,
and merging or checkpointing inside an edit would slow the edit: ``IndexSync`` restarts this
timer after each edit, and ``IDLE_SECONDS`` after the last one the merge runs, one bounded step
at a time on the index thread, stopping as soon as an edit is waiting.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("kiln.lsp.documents")

# Quiet time after the last buffer edit before the small full-text segments edits leave are
# merged and the WAL is checkpointed (``Index.compact``).
IDLE_SECONDS = 2.0


class QuietMerge:
    """The quiet-time timer and the merge it starts; used on the event loop only."""

    def __init__(self, step: Callable[[], Awaitable[Any]], busy: Callable[[], bool]) -> None:
        self._step = step  # one bounded merge step on the index thread; falsy: nothing left
        self._busy = busy  # an edit is waiting for the index
        self._idle: asyncio.TimerHandle | None = None
        self.merged = asyncio.Event()  # set when an idle merge has run (cleared by an edit)

    def restart(self) -> None:
        """(Re)start the quiet-time timer after an edit."""
        loop = asyncio.get_running_loop()
        if self._idle is not None:
            self._idle.cancel()
        self.merged.clear()

        def fire() -> None:
            self._idle = None
            loop.create_task(self.merge())

        self._idle = loop.call_later(IDLE_SECONDS, fire)

    async def merge(self) -> int:
        """Merge the segments edits left, one step at a time, stopping as soon as an edit is
        waiting; returns the steps that did work."""
        steps = 0
        try:
            while not self._busy() and self._idle is None:
                if not await self._step():
                    break
                steps += 1
        except Exception as exc:  # noqa: BLE001 - the index is a cache
            log.info("merging index segments failed: %s", exc)
        if self._idle is None:
            self.merged.set()
        return steps

    def cancel(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
