"""A deadline on reading each request, so a slow client cannot hold a connection for ever.

uvicorn closes a keep-alive connection that stays silent, but not one that is sending: a client
that opens a connection and sends a header byte every few seconds (slowloris), or trickles a
body, holds its socket, its file descriptor and its buffers for as long as it likes, and any
byte it sends switches the keep-alive timer off. With this protocol a request's head and body
must arrive within ``read_timeout`` seconds of the connection opening or of the previous
response; past that the client gets a JSON 408 (when no response has started) and the
connection is closed. Time the server itself spends not reading (a body paused while the app
is busy, a pipelined request waiting for its turn) does not count against the client.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from skills_registry.registry.bad_requests import JsonBadRequests

DEFAULT_READ_TIMEOUT = 60.0

_BODY = json.dumps(
    {
        "error": {
            "code": "request_timeout",
            "message": "the request was not received in time",
            "hint": "send the request's headers and body without pauses",
        }
    }
).encode()
_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
    + f"content-length: {len(_BODY)}\r\nconnection: close\r\n\r\n".encode()
    + _BODY
)


def protocol_with_read_timeout(read_timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol with a per-request read deadline (``uvicorn.Config(http=...)``)
    and JSON answers to requests HTTP itself refuses (``bad_requests``)."""

    class ReadDeadlineProtocol(JsonBadRequests, H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._settle()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._settle()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._settle()  # keep-alive: the next request gets its own deadline

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _settle(self) -> None:
            """Armed while the client owes the request's bytes, off once it has sent them all."""
            owed = self.conn.their_state in (h11.IDLE, h11.SEND_BODY)
            if owed and self._deadline is None and not self.transport.is_closing():
                self._deadline = self.loop.call_later(read_timeout, self._expired)
            elif not owed:
                self._disarm()

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            if self.flow.read_paused:  # the server is not reading: not the client's delay
                self._settle()
                return
            cycle: Any = self.cycle  # while IDLE, the previous request's (answered) cycle
            answering = self.conn.their_state is h11.SEND_BODY and cycle is not None
            if not (answering and cycle.response_started):
                self.transport.write(_TIMEOUT_RESPONSE)
            self.transport.close()

    return ReadDeadlineProtocol
