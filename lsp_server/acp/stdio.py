"""Stdin/stdout as asyncio streams for the protocol, with stdout kept clean.

The protocol gets a private duplicate of file descriptor 1, and fd 1 is then pointed at stderr,
so a stray ``print`` in any library cannot corrupt the JSON-RPC channel. Pipes and sockets (what
editors use) get non-blocking transports; regular files (``kiln acp < requests.jsonl > out``,
handy to replay a conversation) fall back to a reader thread and blocking writes. Lines that
are not JSON objects are answered with a JSON-RPC error here, before the SDK sees them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
from typing import Any, BinaryIO

from agent.errors import KilnError

log = logging.getLogger("kiln.acp")

STDIO_LIMIT = 50 * 1024 * 1024


class StdioError(KilnError):
    exit_code = 2
    hint = "kiln acp is started by an ACP client (Zed, JetBrains, Neovim) with piped stdio"


class _BlockingWriteTransport(asyncio.WriteTransport):
    """Writes straight to a file descriptor; for outputs that are regular files."""

    def __init__(self, stream: BinaryIO) -> None:
        super().__init__()
        self._stream = stream
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._closing:
            self._stream.write(bytes(data))
            self._stream.flush()

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def abort(self) -> None:
        self.close()

    def can_write_eof(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


def _feed_from_thread(
    loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, stream: BinaryIO
) -> None:
    def pump() -> None:
        try:
            while data := stream.readline():
                loop.call_soon_threadsafe(reader.feed_data, data)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="kiln-acp-stdin", daemon=True).start()


async def protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """(reader on stdin, writer on a private copy of stdout); fd 1 then points at stderr."""
    loop = asyncio.get_running_loop()
    try:
        in_fd, out_fd = sys.stdin.fileno(), sys.stdout.fileno()
    except (AttributeError, OSError, ValueError) as exc:
        raise StdioError(f"stdin/stdout are not usable for the protocol: {exc}") from None
    reader = asyncio.StreamReader(limit=STDIO_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except ValueError:  # a regular file
        _feed_from_thread(loop, reader, os.fdopen(os.dup(in_fd), "rb"))
    out = os.fdopen(os.dup(out_fd), "wb", buffering=0)
    protocol: Any
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    except ValueError:  # a regular file
        transport, protocol = _BlockingWriteTransport(out), asyncio.streams.FlowControlMixin(loop)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), out_fd)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return guard(reader, writer), writer


def guard(raw: asyncio.StreamReader, writer: asyncio.StreamWriter) -> asyncio.StreamReader:
    """Pass on only lines that are JSON objects; answer the rest with a JSON-RPC error.

    The SDK skips unparsable lines with a logged traceback and stops on JSON that is not an
    object; a client's framing mistake should cost it one error response, not the server.
    """
    checked = asyncio.StreamReader(limit=STDIO_LIMIT)

    async def pump() -> None:
        try:
            while True:
                try:
                    line = await raw.readline()
                except ValueError:  # longer than the limit; the reader dropped it
                    _reject(writer, -32600, "Invalid request", "message exceeds the size limit")
                    continue
                if not line:
                    break
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError as exc:
                    _reject(writer, -32700, "Parse error", str(exc))
                    continue
                if not isinstance(message, dict):
                    _reject(writer, -32600, "Invalid request", "a message must be a JSON object")
                    continue
                checked.feed_data(line if line.endswith(b"\n") else line + b"\n")
        finally:
            checked.feed_eof()

    checked._kiln_pump = asyncio.ensure_future(pump())  # type: ignore[attr-defined]  # kept alive
    return checked


def _reject(writer: asyncio.StreamWriter, code: int, message: str, detail: str) -> None:
    log.warning("rejected a malformed message: %s", detail)
    error = {"code": code, "message": message, "data": {"details": detail}}
    frame = {"jsonrpc": "2.0", "id": None, "error": error}
    writer.write((json.dumps(frame, separators=(",", ":")) + "\n").encode("utf-8"))
