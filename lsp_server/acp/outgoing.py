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
The hand-off has no gap: answers to the call's requests are kept from the moment they are sent,
so one read between the timeout (or cancel) and the withdrawal, which the SDK drops as no
longer waited for, reaches ``late`` as the call is left.
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
_SENT: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("kiln_acp_sent")
MAX_LATE = 1000  # withdrawn requests whose late answer is still listened for (oldest dropped)


class _Call:
    """One ``withdrawn_if_abandoned`` block: the ids it sent and, when it listens for late
    answers, those answered while it still ran (the caller may have stopped waiting already)."""

    def __init__(self, late: Callable[[Any], None] | None) -> None:
        self.late = late
        self.sent: list[Any] = []
        self.answers: dict[Any, dict[str, Any]] = {}


class OutgoingRequests:
    """Ids of the requests sent inside ``withdrawn_if_abandoned``, cancelled if it is left
    without an answer (a timeout or a cancelled turn)."""

    def __init__(self) -> None:
        self._writer: asyncio.StreamWriter | None = None
        self._late: OrderedDict[Any, Callable[[Any], None]] = OrderedDict()  # id -> callback
        self._open: dict[Any, _Call] = {}  # id -> the running call that sent it, with a ``late``

    def connect(self, writer: asyncio.StreamWriter) -> list[Callable[[Any], None]]:
        """Withdraw through ``writer`` (the protocol stream); returns the ``observers`` to give
        the SDK's connection. Not connected (a test double), nothing is withdrawn."""
        self._writer = writer
        return [self.observe]

    def observe(self, event: Any) -> None:
        message = getattr(event, "message", None)
        if getattr(event, "direction", None) == "incoming":  # a str enum in the SDK
            if isinstance(message, dict) and "method" not in message and (self._late or self._open):
                self._answered(message)
            return
        if isinstance(message, dict) and "method" in message and "id" in message:
            call = _SENT.get(None)
            if call is not None:
                call.sent.append(message["id"])
                if call.late is not None:
                    self._open[message["id"]] = call

    def _answered(self, message: dict[str, Any]) -> None:
        """A withdrawn request's answer (which the SDK drops) goes to its ``late``; one to a call
        still running is kept, in case the call is left without it (``withdrawn_if_abandoned``)."""
        request_id = message.get("id")
        try:
            late = self._late.pop(request_id, None)
            call = self._open.get(request_id)
        except TypeError:  # an id that is no key (a list): none of ours
            return
        if late is not None:
            _deliver(late, message)
        elif call is not None:
            call.answers[request_id] = message

    @asynccontextmanager
    async def withdrawn_if_abandoned(
        self, late: Callable[[Any], None] | None = None
    ) -> AsyncIterator[None]:
        call = _Call(late)
        token = _SENT.set(call)
        try:
            yield
        except (asyncio.CancelledError, TimeoutError):
            for request_id in call.sent:
                answer = call.answers.get(request_id)
                if answer is not None:  # answered as the wait ended: nothing left to withdraw
                    _deliver(late, answer)
                    continue
                self._withdraw(request_id)
                if late is not None:
                    self._late[request_id] = late
                    while len(self._late) > MAX_LATE:
                        self._late.popitem(last=False)
            raise
        finally:
            _SENT.reset(token)
            for request_id in call.sent:
                self._open.pop(request_id, None)

    def _withdraw(self, request_id: Any) -> None:
        writer = self._writer
        if writer is None or writer.is_closing():
            log.info("client gone; request %s not withdrawn", request_id)
            return
        frame = {"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": {"requestId": request_id}}
        writer.write((json.dumps(frame, separators=(",", ":")) + "\n").encode("utf-8"))


def _deliver(late: Callable[[Any], None] | None, answer: dict[str, Any]) -> None:
    """A late answer's success goes to ``late``; an error answer wrote nothing."""
    if late is not None and "result" in answer and "error" not in answer:
        late(answer["result"])
