"""A live session in the server's table: its host, and the one turn or command running in it.

``SessionManager`` keeps one per session it has made live. A prompt's turn is scheduled as a
task before it runs a line, and it may first wait on its ``prepare`` step (the client's text of
an attached file); a built-in command (``/compact``) runs in a turn's place. A cancel can come
at any of those moments: before the turn started (it is then honoured when the turn would
start), during the prepare step or the command (stopped), or while the session's own turn runs.
The turn is marked cancelling until it has unwound, so an answer that arrives meanwhile is not
applied.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent.session import Session
from lsp_server.core.host import CoreHost

Prepare = Callable[[list[Any]], Awaitable[list[Any]]]  # prompt blocks -> blocks, before a turn


@dataclass
class LiveSession:
    """One session the server has made live, with the turn (or command) scheduled in it."""

    session: Session
    host: CoreHost
    turn: asyncio.Task[str] | None = None
    cancel_before_start: bool = False  # a cancel came before the scheduled turn ran a line
    preparing: asyncio.Future[Any] | None = None  # the prompt's ``prepare``, or a command
    cancelling: bool = False  # the running turn was cancelled and is unwinding

    @property
    def busy(self) -> bool:
        """A turn or command is scheduled or running."""
        return self.turn is not None and not self.turn.done()

    async def prepared(self, prompt: list[Any], prepare: Prepare) -> Any:
        """``prepare(prompt)`` as the step a cancel stops; the prompt as it was when a cancel
        came before the turn started (the caller then checks ``cancel_before_start``)."""
        self.preparing = asyncio.ensure_future(prepare(prompt))
        try:
            return await self.preparing
        except asyncio.CancelledError:
            if not self.cancel_before_start:
                raise
            return prompt
        finally:
            self.preparing = None

    async def command(self, work: Callable[[], Awaitable[None]]) -> str:
        """Run a built-in command in a turn's place; its stop reason."""
        if self.cancel_before_start:
            return "cancelled"
        self.preparing = asyncio.ensure_future(work())  # what ``cancel`` stops
        try:
            await self.preparing
        except asyncio.CancelledError:
            if not self.cancel_before_start:
                raise
            return "cancelled"
        finally:
            self.preparing = None
        return "end_turn"

    def cancel(self) -> bool:
        """Cancel the running turn (or the one scheduled, or its prepare step); False if idle."""
        busy = self.busy
        self.cancelling = self.cancelling or busy
        if busy and not self.session.busy:  # scheduled, not started: see ``_turn`` (manager)
            self.cancel_before_start = True
            if self.preparing is not None:  # e.g. waiting for the client's text of a file
                self.preparing.cancel()
        self.session.cancel()
        return busy
