"""A real HTTP server on 127.0.0.1 that speaks the Anthropic Messages and OpenAI Chat
Completions wire formats with scripted replies, so tests and benchmarks exercise the real SDKs.

It records every request (raw bytes and parsed JSON) so tests can check that the frozen prefix
stays byte-stable, and it reports usage the way a prompt cache would: the longest common prefix
(in canonical JSON of tools, system, messages in that order, ``cache_control`` markers ignored;
see ``wire_requests.prompt_text``) with any
earlier request counts as cache read, characters / 4 as tokens. On ``/v1/messages`` caching
only happens when the request carries ``cache_control`` breakpoints, as on the real API.
Requests the real APIs refuse are a 400 here too: a tool call not answered in the very next
message, a result for no call of the message before it, and Anthropic's deferred-tool and
breakpoint rules (``wire_requests``). A reply longer than the request's ``max_tokens``
(``max_completion_tokens``) is cut there, with the stop reason ``max_tokens`` (``length``).

Script steps use the scripted model's vocabulary (see ``agent.providers.scripted``), plus:
``{"error": 429 | 500 | 529 | 400, "retry_after"?: seconds, "message"?: ...}`` for an HTTP
error, ``{"text": "...", "die": true}`` for a stream that breaks off after the text,
``{"stream_error": "overloaded_error"}`` for an SSE ``error`` event inside a 200 stream,
``{"raise": "unavailable"}`` to drop the connection without answering, ``{"garbage": true}``
for a 200 ``text/event-stream`` reply of bytes that are neither UTF-8 nor SSE, and
``{"sleep": seconds}`` / a reply's ``"delay"`` to wait, ``{"wait_for": "path"}`` to wait until a
file exists. ``{"raw": {...}}`` answers exactly as written (see ``agent.testing.wire_raw``).

    with WireServer(["hello"]) as srv:  # srv.url, srv.openai_base_url, srv.requests
        ...

    python -m agent.testing.wire_server --script steps.json --port 0   # prints the URL first
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agent.errors import ConfigError
from agent.providers.scripted import (
    Script,
    ScriptExhausted,
    Step,
    common_prefix_len,
    latest_user_text,
    load_script,
    reply_tool_calls,
)
from agent.testing import wire_formats as wf
from agent.testing.wire_raw import send_raw
from agent.testing.wire_requests import (
    anthropic_tool_problem,
    has_cache_control,
    prompt_text,
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


class WireServer:
    """Scripted Anthropic/OpenAI endpoint; a context manager that runs in a daemon thread."""

    def __init__(self, script: Iterable[Step] = (), *, host: str = "127.0.0.1", port: int = 0,
                 model: str | None = None, requests_log: Path | None = None) -> None:  # fmt: skip
        self.script = script if isinstance(script, Script) else Script(script)
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.requests_log = requests_log
        self._history: dict[str, list[str]] = {}
        self.lock = threading.Lock()
        self._ids = 0
        self.connections: set[socket.socket] = set()
        self.stopping = threading.Event()  # ends stalled raw replies
        self.httpd = _QuietServer((host, port), _make_handler(self))
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    def start(self) -> WireServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="kiln-wire-server", daemon=True)  # fmt: skip
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        with self.lock:
            for conn in list(self.connections):
                _close_quietly(conn)
        self.httpd.server_close()

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def enqueue(self, *steps: Step) -> None:
        self.script.enqueue(*steps)

    def bodies(self, path_suffix: str = "") -> list[Any]:
        """Parsed bodies of the recorded POSTs whose path ends with ``path_suffix``."""
        return [
            r.body for r in self.requests if r.method == "POST" and r.path.endswith(path_suffix)
        ]

    # -- bookkeeping used by the handler -----------------------------------------------------

    def record(self, rec: RecordedRequest) -> None:
        with self.lock:
            self.requests.append(rec)
            if self.requests_log is not None:
                with self.requests_log.open("a", encoding="utf-8") as fh:
                    fh.write(
                        json.dumps({"path": rec.path, "body": rec.body}, ensure_ascii=False) + "\n"
                    )

    def next_id(self, prefix: str) -> str:
        with self.lock:
            self._ids += 1
            return f"{prefix}{self._ids:04d}"

    def usage_for(self, api: str, body: dict[str, Any], reply: wf.WireReply) -> wf.WireUsage:
        text = prompt_text(api, body)
        total = len(text) // 4
        caching = api == "openai" or has_cache_control(body)
        with self.lock:
            history = self._history.setdefault(api, [])
            lcp = (
                max((common_prefix_len(text, old) for old in history), default=0) if caching else 0
            )
            history.append(text)
        output = wf.output_tokens(reply)
        read = lcp // 4
        if api == "anthropic" and caching:
            return wf.WireUsage(
                input_tokens=0, cache_read=read, cache_write=total - read, output_tokens=output
            )
        return wf.WireUsage(
            input_tokens=total - read, cache_read=read, cache_write=0, output_tokens=output
        )


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up mid-exchange is normal here; anything else is still reported."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def _close_quietly(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    conn.close()


def _make_handler(server: WireServer) -> type[BaseHTTPRequestHandler]:
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
            problem = (anthropic_tool_problem(body) if api == "anthropic" else "") or (
                tool_pairing_problem(api, body)
            )
            if problem:
                self._error(api, 400, problem)
                return
            self._answer(api, body)

        def _answer(self, api: str, body: dict[str, Any]) -> None:
            while True:
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
                    while not Path(step["wait_for"]).exists():
                        time.sleep(0.02)
                    continue
                break
            time.sleep(float(step.get("delay") or step.get("sleep") or 0))
            if "raw" in step:
                send_raw(self, step["raw"], server.stopping)
                return
            kind = step.get("raise")
            if kind == "unavailable":
                self.close_connection = True
                _close_quietly(self.connection)
                return
            if step.get("garbage"):
                self._sse([GARBAGE], False)
                return
            status = step.get("error") or _RAISE_STATUS.get(str(kind), 0)
            if status:
                headers = {}
                if step.get("retry_after") is not None:
                    headers["retry-after"] = str(step["retry_after"])
                self._error(
                    api, int(status), step.get("message") or f"scripted error {status}", headers
                )
                return
            prefix = "toolu_" if api == "anthropic" else "call_"
            calls = [{**c, "id": c["id"] or server.next_id(prefix)} for c in reply_tool_calls(step)]
            reply = wf.WireReply(text=str(step.get("text") or ""), tool_calls=calls,
                                 stop_reason=step.get("stop_reason"),
                                 die=bool(step.get("die")) or kind == "partial",
                                 stream_error=step.get("stream_error"))  # fmt: skip
            if kind == "partial" and not reply.text:
                reply.text = "The answer is"
            reply = wf.cut_to(reply, wf.requested_limit(body))  # as a real API stops
            usage = server.usage_for(api, body, reply)
            model = server.model or str(body.get("model") or "wire-model")
            msg_id = server.next_id("msg_" if api == "anthropic" else "chatcmpl-")
            if not body.get("stream"):
                make = wf.anthropic_json if api == "anthropic" else wf.openai_json
                self._json(200, make(reply, usage, model=model, msg_id=msg_id))
            elif api == "anthropic":
                self._sse(wf.anthropic_sse(reply, usage, model=model, msg_id=msg_id), reply.die)
            else:
                wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                frames = wf.openai_sse(
                    reply, usage if wants_usage else None, model=model, msg_id=msg_id
                )
                self._sse(frames, reply.die)

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
                    _close_quietly(self.connection)
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                self.close_connection = True

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agent.testing.wire_server", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--script", required=True, help="JSON file holding a list of steps")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--model", default=None, help="model id to report (default: echo the request's)"
    )
    parser.add_argument(
        "--requests-log", type=Path, default=None, help="append each request body here (JSONL)"
    )
    args = parser.parse_args(argv)
    try:
        steps = load_script(args.script)
    except ConfigError as exc:
        hint = "--script must name a JSON file of steps" if "KILN_SCRIPT" in exc.hint else exc.hint
        print(f"wire_server: {exc} ({hint})", file=sys.stderr)
        return 2
    srv = WireServer(
        steps, host=args.host, port=args.port, model=args.model, requests_log=args.requests_log
    )
    print(srv.url, flush=True)

    def _stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    try:
        srv.httpd.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        srv.httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
