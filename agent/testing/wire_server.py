"""A real HTTP server on 127.0.0.1 that speaks the Anthropic Messages and OpenAI Chat
Completions wire formats with scripted replies, so tests and benchmarks exercise the real SDKs.

It records every request (raw bytes and parsed JSON) so tests can check that the frozen prefix
stays byte-stable, and it reports usage the way the providers' prompt caches would
(``wire_cache``; characters / 4 as tokens, prompts in canonical JSON of tools, system, messages,
``cache_control`` markers ignored; see ``wire_requests.prompt_text``): on OpenAI the longest
common prefix with any earlier request is read; on ``/v1/messages`` only an entry an earlier
request of the same model wrote at a ``cache_control`` breakpoint, reached from a breakpoint of
this one or up to 20 blocks before it, as on the real API.
Requests the real APIs refuse are a 400 here too: a tool call not answered in the very next
message, a result for no call of the message before it, and Anthropic's deferred-tool and
breakpoint rules, and an empty message where neither API takes one (``wire_requests``); and, as Anthropic does, a request that still holds a reply
it stopped as a ``refusal`` is declined again (an empty reply, ``stop_reason: refusal``). A reply longer than the request's ``max_tokens``
(``max_completion_tokens``) is cut there, with the stop reason ``max_tokens`` (``length``).

Script steps use the scripted model's vocabulary (see ``agent.providers.scripted``), plus:
``{"error": 429 | 500 | 529 | 400, "retry_after"?: seconds, "retry_after_ms"?: ms,
"message"?: ...}`` for an HTTP error (with those headers), ``{"text": "...", "die": true}`` for a stream that breaks off after the text, ``"drop_last": n``
on a reply for a stream that ends cleanly without its last n events (``message_stop``, ``[DONE]``),
``{"refusal": "..."}`` for OpenAI's refusal text (``delta.refusal``, no ``content``),
``{"stream_error": "overloaded_error"}`` for an SSE ``error`` event inside a 200 stream (after
the reply's text, if it has any),
``{"raise": "unavailable"}`` to drop the connection without answering, ``{"garbage": true}``
for a 200 ``text/event-stream`` reply of bytes that are neither UTF-8 nor SSE, and
``{"sleep": seconds}`` / a reply's ``"delay"`` to wait, ``{"wait_for": "path"}`` to wait until a
file exists. ``{"raw": {...}}`` answers exactly as written (see ``agent.testing.wire_raw``). Given a
``window`` (``--window``), a request whose prompt and ``max_tokens`` exceed it is a 400 in the
words vLLM and Anthropic use, as a server started with a small context answers.

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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agent.errors import ConfigError
from agent.providers.scripted import Script, Step, load_script
from agent.testing import wire_formats as wf
from agent.testing.wire_cache import PromptCache
from agent.testing.wire_handler import QuietServer, RecordedRequest, close_quietly, make_handler
from agent.testing.wire_requests import prompt_text


class WireServer:
    """Scripted Anthropic/OpenAI endpoint; a context manager that runs in a daemon thread."""

    def __init__(self, script: Iterable[Step] = (), *, host: str = "127.0.0.1", port: int = 0,
                 model: str | None = None, requests_log: Path | None = None,
                 window: int = 0) -> None:  # fmt: skip
        self.script = script if isinstance(script, Script) else Script(script)
        self.window = window  # the model's context window: prompt + max_tokens past it is a 400
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.requests_log = requests_log
        self.cache = PromptCache()
        self.refused: set[str] = set()  # texts of Anthropic replies stopped as a refusal
        self.lock = threading.Lock()
        self._ids = 0
        self.connections: set[socket.socket] = set()
        self.stopping = threading.Event()  # ends stalled raw replies
        self.httpd = QuietServer((host, port), make_handler(self))
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
                close_quietly(conn)
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

    def holds_refused(self, body: dict[str, Any]) -> bool:
        """Whether a request still holds a reply this server declined: Anthropic refuses those
        again until the refused turn is removed or changed."""
        with self.lock:
            refused = set(self.refused)
        return any(
            m.get("role") == "assistant"
            and "".join(b.get("text", "") for b in m.get("content") or [] if isinstance(b, dict))
            in refused
            for m in body.get("messages") or []
            if isinstance(m.get("content"), list)
        )

    def window_problem(self, api: str, body: dict[str, Any]) -> str:
        """The 400 a server with a context window of ``window`` tokens answers when the prompt
        and the reply it may write do not both fit, in vLLM's (OpenAI's) or Anthropic's words."""
        prompt, limit = len(prompt_text(api, body)) // 4, wf.requested_limit(body)
        if not self.window or prompt + limit <= self.window:
            return ""
        if api == "anthropic":
            return (
                f"input length and `max_tokens` exceed context limit: {prompt} + {limit} > "
                f"{self.window}, decrease input length or `max_tokens` and try again"
            )
        return (
            f"This model's maximum context length is {self.window} tokens. However, you "
            f"requested {prompt + limit} tokens ({prompt} in the messages, {limit} in the "
            "completion). Please reduce the length of the messages or completion."
        )

    def usage_for(self, api: str, body: dict[str, Any], reply: wf.WireReply) -> wf.WireUsage:
        """Tokens (characters / 4) as the provider's prompt cache would count them
        (``wire_cache``): the three prompt counts add up to the prompt's length."""
        fresh, read, write = self.cache.usage(api, body)
        total, read_tokens = (fresh + read + write) // 4, read // 4
        write_tokens = (read + write) // 4 - read_tokens
        return wf.WireUsage(
            input_tokens=total - read_tokens - write_tokens,
            cache_read=read_tokens,
            cache_write=write_tokens,
            output_tokens=wf.output_tokens(reply),
        )


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
    parser.add_argument("--window", type=int, default=0, help="the model's context window")
    args = parser.parse_args(argv)
    try:
        steps = load_script(args.script)
    except ConfigError as exc:
        hint = "--script must name a JSON file of steps" if "KILN_SCRIPT" in exc.hint else exc.hint
        print(f"wire_server: {exc} ({hint})", file=sys.stderr)
        return 2
    srv = WireServer(
        steps,
        host=args.host,
        port=args.port,
        model=args.model,
        requests_log=args.requests_log,
        window=args.window,
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
