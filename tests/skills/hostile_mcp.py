"""A badly behaved MCP server over stdio, written against the wire (no SDK), for the tests.

``python hostile_mcp.py BEHAVIOUR [ARG]``. It answers ``initialize`` and ``tools/list`` like a
real server unless BEHAVIOUR says otherwise, and ``tools/call`` of its tool ``echo`` with the
text it was given:

- ``mute-list``: never answers ``tools/list``.
- ``crash-call``: exits with status 3 while a ``tools/call`` waits for its answer.
- ``crash-once FILE``: as ``crash-call`` when FILE does not exist (it creates it first), then
  answers as usual.
- ``slow-call N``: answers ``tools/call`` after N seconds.
- ``big-result N``: answers ``tools/call`` with N MB of text.
- ``stderr-flood N``: writes N MB to stderr before it answers ``initialize``.
- ``tools JSON``: ``tools/list`` answers the tools in JSON (a list), as they are.
- ``ask-back``: during a call, asks the client for sampling, roots and elicitation, then answers
  with what each request got (``error CODE`` or ``ok``); also sends ``tools/list_changed``.
- ``grows``: a call of ``echo`` sends ``tools/list_changed`` first; from then on ``tools/list``
  answers ``shout`` instead of ``echo`` (a tool added, one removed).
- ``deaf``: ignores SIGTERM and the end of its input; writes its pid to ARG first.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

BEHAVIOUR = sys.argv[1] if len(sys.argv) > 1 else ""
ARG = sys.argv[2] if len(sys.argv) > 2 else ""
ECHO = {
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
SHOUT = {**ECHO, "name": "shout", "description": "Shout the text back in capitals."}
CHANGED = []  # "grows": set once its tools changed


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def read() -> dict[str, Any] | None:
    line = sys.stdin.readline()
    if not line:
        return None
    return json.loads(line) if line.strip() else {}


def ask(request_id: int, method: str, params: dict[str, Any]) -> str:
    """Send a request to the client and return how it was answered."""
    send({"id": f"back-{request_id}", "method": method, "params": params})
    while True:
        message = read()
        if message is None:
            sys.exit(0)
        if message.get("id") == f"back-{request_id}":
            error = message.get("error")
            return f"error {error.get('code')}" if error else "ok"


def call_result(message: dict[str, Any]) -> dict[str, Any]:
    if BEHAVIOUR == "crash-call" or (BEHAVIOUR == "crash-once" and not os.path.exists(ARG)):
        if ARG:
            open(ARG, "w").close()
        sys.exit(3)
    if BEHAVIOUR == "slow-call":
        time.sleep(float(ARG))
    if BEHAVIOUR == "grows" and not CHANGED:
        CHANGED.append(True)
        send({"method": "notifications/tools/list_changed"})
    if BEHAVIOUR == "big-result":
        text = "x" * (int(ARG) * 1024 * 1024)
    elif BEHAVIOUR == "ask-back":
        send({"method": "notifications/tools/list_changed"})
        answers = [
            ask(1, "sampling/createMessage", {"messages": [], "maxTokens": 10}),
            ask(2, "roots/list", {}),
            ask(3, "elicitation/create", {"message": "password?", "requestedSchema": {}}),
        ]
        text = " | ".join(answers)
    else:
        text = str(message.get("params", {}).get("arguments", {}).get("text", ""))
        if message.get("params", {}).get("name") == "shout":
            text = text.upper()
    return {"content": [{"type": "text", "text": text}]}


def answer(message: dict[str, Any]) -> None:
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        return
    if method == "initialize":
        if BEHAVIOUR == "stderr-flood":
            chunk = "E" * 1023 + "\n"
            for _ in range(int(ARG) * 1024):
                sys.stderr.write(chunk)
            sys.stderr.flush()
        capabilities = {"tools": {"listChanged": True}}
        send({"id": request_id, "result": {"protocolVersion": "2025-06-18",
              "capabilities": capabilities, "serverInfo": {"name": "hostile", "version": "1"}}})  # fmt: skip
    elif method == "tools/list":
        if BEHAVIOUR == "mute-list":
            return
        tools = json.loads(ARG) if BEHAVIOUR == "tools" else [SHOUT] if CHANGED else [ECHO]
        send({"id": request_id, "result": {"tools": tools}})
    elif method == "tools/call":
        send({"id": request_id, "result": call_result(message)})
    else:
        send({"id": request_id, "error": {"code": -32601, "message": f"no {method}"}})


def main() -> None:
    if BEHAVIOUR == "deaf":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with open(ARG, "w") as out:
            out.write(str(os.getpid()))
    while (message := read()) is not None:
        answer(message)
    if BEHAVIOUR == "deaf":
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
