"""A stdio relay between an editor and a real ``kiln lsp`` that holds the server's answers to
one method until the test lets them through: a slow server on demand, without timing.

``python hold_proxy.py DIR METHOD -- CMD...``: every request for METHOD is counted in
``DIR/asked`` (one line per request); its answer is kept back until ``DIR/release`` exists,
then all kept answers are sent in order. Everything else passes unchanged.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import BinaryIO


def read_message(stream: BinaryIO) -> bytes | None:
    headers = b""
    while not headers.endswith(b"\r\n\r\n"):
        byte = stream.read(1)
        if not byte:
            return None
        headers += byte
    length = 0
    for line in headers.decode("ascii").split("\r\n"):
        if line.lower().startswith("content-length:"):
            length = int(line.split(":", 1)[1])
    return stream.read(length)


def write_message(stream: BinaryIO, body: bytes, lock: threading.Lock) -> None:
    with lock:
        stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stream.flush()


def main() -> int:
    folder, method = Path(sys.argv[1]), sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1 :]
    server = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    held_ids: set[object] = set()
    kept: list[bytes] = []
    state = threading.Lock()
    out_lock = threading.Lock()
    editor_in, editor_out = sys.stdin.buffer, sys.stdout.buffer

    def released() -> bool:
        return (folder / "release").exists()

    def to_server() -> None:
        while (body := read_message(editor_in)) is not None:
            message = json.loads(body)
            if message.get("method") == method and "id" in message:
                with state:
                    held_ids.add(message["id"])
                with (folder / "asked").open("a") as f:
                    f.write(json.dumps(message.get("params")) + "\n")
            write_message(server.stdin, body, threading.Lock())
        server.stdin.close()

    def flush_when_released() -> None:
        while not released():  # a helper process, not a test: polling the flag file is fine
            if server.poll() is not None:
                return
            time.sleep(0.02)
        with state:
            bodies, kept[:] = list(kept), []
        for body in bodies:
            write_message(editor_out, body, out_lock)

    threading.Thread(target=to_server, daemon=True).start()
    threading.Thread(target=flush_when_released, daemon=True).start()
    while (body := read_message(server.stdout)) is not None:
        message = json.loads(body)
        with state:
            hold = "method" not in message and message.get("id") in held_ids
            if hold and not released():
                kept.append(body)
                continue
        write_message(editor_out, body, out_lock)
    return server.wait()


if __name__ == "__main__":
    raise SystemExit(main())
