"""The wire server's HTTP side: the routes, the checks a real API makes before answering, and a
script step answered as the API would (JSON, or SSE in chunks that may break off), with clients
that hang up mid-exchange handled quietly. ``WireServer`` (``wire_server``) holds the state: the
script, the recorded requests, the ids and the prompt-cache history."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

from agent.providers.scripted import Script, ScriptExhausted, latest_user_text, reply_tool_calls
from agent.testing import wire_formats as wf
from agent.testing.wire_raw import send_raw
from agent.testing.wire_requests import (
    anthropic_tool_problem,
    empty_message_problem,
    tool_pairing_problem,
)

# What a broken proxy might send with a 200 and an SSE content type: not UTF-8, not SSE.
GARBAGE = b"\xff\xfe\x00garbage\x80\x81\xc3(\n\ndata: \xe2\x28\xa1\n\n"
_RAISE_STATUS = {"rate_limit": 429, "server": 500, "overloaded": 529, "bad_request": 400}


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any


class WireState(Protocol):
    """What the handler uses of its ``WireServer``."""

    lock: threading.Lock
    connections: set[socket.socket]
    model: str | None
    requests: list[RecordedRequest]
    script: Script
    stopping: threading.Event

    def record(self, rec: RecordedRequest) -> None: ...

    def next_id(self, prefix: str) -> str: ...

    def usage_for(self, api: str, body: dict[str, Any], reply: wf.WireReply) -> wf.WireUsage: ...

    refused: set[str]

    def holds_refused(self, body: dict[str, Any]) -> bool: ...

    def window_problem(self, api: str, body: dict[str, Any]) -> str: ...


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up mid-exchange is normal here; anything else is still reported."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def close_quietly(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    conn.close()


def make_handler(server: WireState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Many small SSE writes: without this, Nagle + delayed ACK add ~40 ms per frame.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with server.lock:
                server.connections.add(self.connection)

        def finish(self) -> None:
            with server.lock:
                server.connections.discard(self.connection)
            try:
                super().finish()
            except OSError:
                pass

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            """Silent: stdout may be a protocol channel and stderr belongs to the test."""

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(
                    200,
                    {
                        "object": "list",
                        "data": [{"id": server.model or "wire-model", "object": "model"}],
                    },
                )
            elif self.path == "/_kiln/requests":
                self._json(200, [{"path": r.path, "body": r.body} for r in server.requests])
            else:
                self._json(404, {"error": {"message": f"no route for GET {self.path}"}})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = None
            server.record(
                RecordedRequest(
                    "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, raw, body
                )
            )
            path = self.path.split("?", 1)[0]
            if path.endswith("/messages"):
                api = "anthropic"
            elif path.endswith("/chat/completions"):
                api = "openai"
            else:
                self._json(404, {"error": {"message": f"no route for POST {self.path}"}})
                return
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                self._error(api, 400, "request body must be a JSON object with a messages list")
                return
            problem = (
                (anthropic_tool_problem(body) if api == "anthropic" else "")
                or tool_pairing_problem(api, body)
                or empty_message_problem(api, body)
                or server.window_problem(api, body)
            )
            if problem:
                self._error(api, 400, problem)
                return
            self._answer(api, body)

        def _answer(self, api: str, body: dict[str, Any]) -> None:
            # Anthropic declines every request that still holds a turn it declined.
            refused = api == "anthropic" and server.holds_refused(body)
            while not refused:
                try:
                    step = server.script.take(latest_user_text(body["messages"]))
                except ScriptExhausted as exc:
                    self._error(api, 400, f"wire server: {exc}")
                    return
                if callable(step):
                    step = step(body)
                if isinstance(step, str):
                    step = {"text": step}
                if "sleep" in step and not (
                    {"text", "tool_calls", "raise", "error", "raw"} & step.keys()
                ):
                    time.sleep(float(step["sleep"]))
                    continue
                if "wait_for" in step:
                    if step.get("reached"):  # as the scripted provider: the request is held
                        Path(step["reached"]).touch()
                    while not Path(step["wait_for"]).exists():
                        time.sleep(0.02)
                    continue
                break
            if refused:
                step = {"text": "", "stop_reason": "refusal"}
            time.sleep(float(step.get("delay") or step.get("sleep") or 0))
            if "raw" in step:
                send_raw(self, step["raw"], server.stopping)
                return
            kind = step.get("raise")
            if kind == "unavailable":
                self.close_connection = True
                close_quietly(self.connection)
                return
            if step.get("garbage"):
                self._sse([GARBAGE], False)
                return
            status = step.get("error") or _RAISE_STATUS.get(str(kind), 0)
            if status:
                headers = {}
                for key in ("retry_after", "retry_after_ms"):
                    if step.get(key) is not None:
                        headers[key.replace("_", "-")] = str(step[key])
                self._error(
                    api, int(status), step.get("message") or f"scripted error {status}", headers
                )
                return
            prefix = "toolu_" if api == "anthropic" else "call_"
            calls = [{**c, "id": c["id"] or server.next_id(prefix)} for c in reply_tool_calls(step)]
            reply = wf.WireReply(text=str(step.get("text") or ""), tool_calls=calls,
                                 stop_reason=step.get("stop_reason"),
                                 die=bool(step.get("die")) or kind == "partial",
                                 stream_error=step.get("stream_error"),
                                 stop_details=step.get("stop_details"),
                                 refusal=str(step.get("refusal") or ""))  # fmt: skip
            if kind == "partial" and not reply.text:
                reply.text = "The answer is"
            reply = wf.cut_to(reply, wf.requested_limit(body))  # as a real API stops
            usage = server.usage_for(api, body, reply)
            if api == "anthropic" and reply.stop_reason == "refusal" and reply.text:
                server.refused.add(reply.text)
            model = server.model or str(body.get("model") or "wire-model")
            msg_id = server.next_id("msg_" if api == "anthropic" else "chatcmpl-")
            if not body.get("stream"):
                make = wf.anthropic_json if api == "anthropic" else wf.openai_json
                self._json(200, make(reply, usage, model=model, msg_id=msg_id))
            elif api == "anthropic":
                frames = wf.anthropic_sse(reply, usage, model=model, msg_id=msg_id)
                self._sse(frames[: len(frames) - int(step.get("drop_last") or 0)], reply.die)
            else:
                wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                frames = wf.openai_sse(
                    reply, usage if wants_usage else None, model=model, msg_id=msg_id
                )
                self._sse(frames[: len(frames) - int(step.get("drop_last") or 0)], reply.die)

        def _error(
            self, api: str, status: int, message: str, headers: dict[str, str] | None = None
        ) -> None:
            make = wf.anthropic_error if api == "anthropic" else wf.openai_error
            self._json(status, make(status, message), headers)

        def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _sse(self, frames: list[bytes], die: bool) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            try:
                for frame in frames:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                    self.wfile.flush()
                if die:
                    # No terminating chunk: the client sees an incomplete body, as when a
                    # connection drops mid-stream.
                    self.close_connection = True
                    close_quietly(self.connection)
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                self.close_connection = True

    return Handler
