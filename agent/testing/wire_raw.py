"""Hand-written replies for the wire server: what real endpoints and compatible servers send
that the scripted happy path never does (events out of the usual order, a 200 HTML page from a
proxy, rate-limit headers, a stream that stalls after its headers).

A ``{"raw": {...}}`` step is answered exactly as written:

- ``status`` (default 200), ``headers`` (extra response headers), ``content_type``;
- ``frames``: SSE frames sent one by one (a dict is sent as ``data: <json>``, a string as is,
  with the blank line added when missing); or ``body``: one text body sent whole;
- ``end``: how the reply ends after the frames: ``"close"`` (the default, a complete body),
  ``"die"`` (the connection drops without the closing chunk) or ``"stall"`` (nothing more is
  sent until the client hangs up or the server stops).
"""

from __future__ import annotations

import json
import select
import socket
import threading
from typing import Any


def frame_bytes(frame: Any) -> bytes:
    """One SSE frame: ``data: <json>`` for a dict or list, the text itself otherwise."""
    if isinstance(frame, (dict, list)):
        text = "data: " + json.dumps(frame, separators=(",", ":"))
    else:
        text = str(frame)
    if not text.endswith("\n\n"):
        text = text.rstrip("\n") + "\n\n"
    return text.encode()


def send_raw(handler: Any, spec: dict[str, Any], stopping: threading.Event) -> None:
    """Write the reply ``spec`` describes on ``handler`` (a ``BaseHTTPRequestHandler``)."""
    status = int(spec.get("status", 200))
    end = str(spec.get("end", "close"))
    if "body" in spec:
        chunks = [str(spec["body"]).encode()]
        content_type = spec.get("content_type", "text/html; charset=utf-8")
    else:
        chunks = [frame_bytes(f) for f in spec.get("frames", [])]
        content_type = spec.get("content_type", "text/event-stream")
    handler.send_response(status)
    handler.send_header("content-type", content_type)
    handler.send_header("transfer-encoding", "chunked")
    for name, value in (spec.get("headers") or {}).items():
        handler.send_header(name, str(value))
    handler.end_headers()
    conn: socket.socket = handler.connection
    try:
        for chunk in chunks:
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            handler.wfile.flush()
        if end == "stall":
            _wait_for_hangup(conn, stopping)
        elif end != "die":
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
            return
    except OSError:
        pass
    handler.close_connection = True
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _wait_for_hangup(conn: socket.socket, stopping: threading.Event) -> None:
    """Block until the client closes its end (readable at EOF) or the server stops."""
    while not stopping.is_set():
        readable, _, _ = select.select([conn], [], [], 0.05)
        if readable:
            try:
                if not conn.recv(1, socket.MSG_PEEK):
                    return
            except OSError:
                return
