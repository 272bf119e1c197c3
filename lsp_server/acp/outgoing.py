"""Withdrawing the agent's own requests to the client with ACP's ``$/cancel_request``.

When Kiln stops waiting for an answer it asked the client for — a permission question that
timed out, a question or file request of a turn that was cancelled — the client is told, so
its dialog closes instead of waiting for a click that would go nowhere (ACP cancellation: the
requesting side sends ``$/cancel_request`` with the request's id; the client still answers).

The Python SDK neither tells a caller the id of the request it sent nor sends
``$/cancel_request``. Its connection's observer hook sees every outgoing request in the task
that sends it, so a context variable set around one call (``withdrawn_if_abandoned``) collects
that call's ids, even while other sessions send requests at the same time.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

log = logging.getLogger("kiln.acp")

CANCEL_REQUEST = "$/cancel_request"
_SENT: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("kiln_acp_sent")


class OutgoingRequests:
    """Ids of the requests sent inside ``withdrawn_if_abandoned``, cancelled if it is left
    without an answer (a timeout or a cancelled turn)."""

    def __init__(self, connection: Any) -> None:
        # ``AgentSideConnection`` keeps its JSON-RPC connection private; without it (another
        # SDK version, a test double) nothing is withdrawn and everything else works.
        self._rpc = getattr(connection, "_conn", None)
        self._sends: set[asyncio.Task[None]] = set()
        add_observer = getattr(self._rpc, "add_observer", None)
        if callable(add_observer):
            add_observer(self._observe)
        else:
            self._rpc = None

    def _observe(self, event: Any) -> None:
        if getattr(event, "direction", None) != "outgoing":  # a str enum in the SDK
            return
        message = getattr(event, "message", None)
        if isinstance(message, dict) and "method" in message and "id" in message:
            sent = _SENT.get(None)
            if sent is not None:
                sent.append(message["id"])

    @asynccontextmanager
    async def withdrawn_if_abandoned(self) -> AsyncIterator[None]:
        sent: list[Any] = []
        token = _SENT.set(sent)
        try:
            yield
        except (asyncio.CancelledError, TimeoutError):
            for request_id in sent:
                self._withdraw(request_id)
            raise
        finally:
            _SENT.reset(token)

    def _withdraw(self, request_id: Any) -> None:
        """Send ``$/cancel_request`` from a task of its own: the caller is being cancelled."""
        if self._rpc is None:
            return

        async def send() -> None:
            try:
                await self._rpc.send_notification(CANCEL_REQUEST, {"requestId": request_id})
            except (ConnectionError, RuntimeError, OSError):
                log.info("client gone; request %s not withdrawn", request_id)

        task = asyncio.ensure_future(send())
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)
