"""Withdrawing the agent's own requests to the client with ACP's ``$/cancel_request``.

When Kiln stops waiting for an answer it asked the client for — a permission question that
timed out, a question or file request of a turn that was cancelled — the client is told, so
its dialog closes instead of waiting for a click that would go nowhere (ACP cancellation: the
requesting side sends ``$/cancel_request`` with the request's id; the client still answers).

The Python SDK neither tells a caller the id of the request it sent nor sends
``$/cancel_request``. Its connection takes ``observers`` (a public argument of
``acp.connection.Connection`` that ``AgentSideConnection`` passes on), which see every outgoing
request in the task that sends it, so a context variable set around one call
(``withdrawn_if_abandoned``) collects that call's ids, even while other sessions send requests at
the same time. The withdrawal is written to the protocol stream as one whole line, as the
stdio guard writes its own answers (``lsp_server.acp.stdio``).

The SDK drops an answer to a request its caller stopped waiting for; the observers see it
first. A caller that must hear a late success (a file the client wrote all the same) names a
``late`` callback: it gets the result of a withdrawn request that the client answers after all.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

log = logging.getLogger("kiln.acp")

CANCEL_REQUEST = "$/cancel_request"
_SENT: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("kiln_acp_sent")
MAX_LATE = 1000  # withdrawn requests whose late answer is still listened for (oldest dropped)


class OutgoingRequests:
    """Ids of the requests sent inside ``withdrawn_if_abandoned``, cancelled if it is left
    without an answer (a timeout or a cancelled turn)."""

    def __init__(self) -> None:
        self._writer: asyncio.StreamWriter | None = None
        self._late: OrderedDict[Any, Callable[[Any], None]] = OrderedDict()  # id -> callback

    def connect(self, writer: asyncio.StreamWriter) -> list[Callable[[Any], None]]:
        """Withdraw through ``writer`` (the protocol stream); returns the ``observers`` to give
        the SDK's connection. Not connected (a test double), nothing is withdrawn."""
        self._writer = writer
        return [self.observe]

    def observe(self, event: Any) -> None:
        message = getattr(event, "message", None)
        if getattr(event, "direction", None) == "incoming":  # a str enum in the SDK
            if isinstance(message, dict) and "method" not in message and self._late:
                self._answered(message)
            return
        if isinstance(message, dict) and "method" in message and "id" in message:
            sent = _SENT.get(None)
            if sent is not None:
                sent.append(message["id"])

    def _answered(self, message: dict[str, Any]) -> None:
        """An answer the SDK will drop: a withdrawn request's ``late`` hears a success."""
        try:
            late = self._late.pop(message.get("id"), None)
        except TypeError:  # an id that is no key (a list): none of ours
            return
        if late is not None and "result" in message and "error" not in message:
            late(message["result"])

    @asynccontextmanager
    async def withdrawn_if_abandoned(
        self, late: Callable[[Any], None] | None = None
    ) -> AsyncIterator[None]:
        sent: list[Any] = []
        token = _SENT.set(sent)
        try:
            yield
        except (asyncio.CancelledError, TimeoutError):
            for request_id in sent:
                self._withdraw(request_id)
                if late is not None:
                    self._late[request_id] = late
                    while len(self._late) > MAX_LATE:
                        self._late.popitem(last=False)
            raise
        finally:
            _SENT.reset(token)

    def _withdraw(self, request_id: Any) -> None:
        writer = self._writer
        if writer is None or writer.is_closing():
            log.info("client gone; request %s not withdrawn", request_id)
            return
        frame = {"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": {"requestId": request_id}}
        writer.write((json.dumps(frame, separators=(",", ":")) + "\n").encode("utf-8"))
