"""Requests HTTP itself refuses, answered as JSON like every other registry error.

uvicorn answers a request h11 cannot parse (a garbage request line, a header line without a
colon, a bad chunk size, a header block past its 16 KB buffer) with a plain-text
``Invalid HTTP request received.``; clients and proxies that read the registry's
``{"error": {...}}`` shape then see a body they cannot parse. This mixin for uvicorn's h11
protocol sends the JSON error instead: 431 when the unparsed bytes outgrew the header buffer,
400 otherwise; the connection is closed either way, as uvicorn does. h11 bounds only a header
block still arriving: one of up to a read's size (256 KB) that came whole was served, so a
20 KB block got a 200 (docs/registry.md: 431 over 16 KB); it is measured as it arrives too,
and again when a pipelined request waiting in the buffer gets its turn.
"""

from __future__ import annotations

import json
import re
from typing import Any

import h11
from h11._connection import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE


def _body(message: str, hint: str) -> bytes:
    return json.dumps({"error": {"code": "bad_request", "message": message, "hint": hint}}).encode()


_MALFORMED = _body("the request is not valid HTTP/1.1", "")
_TOO_LARGE = _body(
    "the request's header block is too large",
    "send fewer or shorter headers (at most 16 KB in all)",
)

_BLANK_LINE = re.compile(rb"\n\r?\n")  # the end of a header block, as h11 reads it


class JsonBadRequests:
    """Mix into ``H11Protocol`` (first in the bases): its ``send_400_response``, in JSON."""

    conn: h11.Connection
    transport: Any
    config: Any

    def handle_events(self) -> None:
        """Measured before each request is parsed: on new data, and when a pipelined request
        that waited in the buffer behind the previous one gets its turn (before, only a head
        that arrived while the connection was idle was measured, so a 20 KB head sent in the
        same write as a small first request was served)."""
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            pending = bytes(self.conn.trailing_data[0])  # the next request's head so far
            end = _BLANK_LINE.search(pending)
            if (end.end() if end else len(pending)) > self._cap():
                self._refuse(431, _TOO_LARGE)
                return
        super().handle_events()  # type: ignore[misc]

    def send_400_response(self, msg: str) -> None:
        if self.conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):  # a response has begun
            self.transport.close()
            return
        too_large = len(self.conn.trailing_data[0]) > self._cap()
        self._refuse(*((431, _TOO_LARGE) if too_large else (400, _MALFORMED)))

    def _cap(self) -> int:
        return int(self.config.h11_max_incomplete_event_size or DEFAULT_MAX_INCOMPLETE_EVENT_SIZE)

    def _refuse(self, status: int, body: bytes) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (h11.Response(status_code=status, headers=headers), h11.Data(data=body)):
            self.transport.write(self.conn.send(event))
        self.transport.write(self.conn.send(h11.EndOfMessage()))
        self.transport.close()
