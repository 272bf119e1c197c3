"""Stdin/stdout as asyncio streams for a JSON-RPC server, with stdout kept clean.

Both servers (`kiln lsp`, `kiln acp`) speak on stdio. The protocol gets a private duplicate of
file descriptor 1, and fd 1 is then pointed at stderr, so a stray ``print`` in any library cannot
corrupt the channel. Pipes and sockets (what editors use) get non-blocking transports; regular
files (``kiln acp < requests.jsonl > out``, handy to replay a conversation) and devices such as
``/dev/null`` fall back to a reader thread and blocking writes.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from typing import Any, BinaryIO

from agent.errors import KilnError

STDIO_LIMIT = 50 * 1024 * 1024


class StdioError(KilnError):
    exit_code = 2
    hint = "the server is started by an editor or ACP client with piped stdio"


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

    threading.Thread(target=pump, name="kiln-stdin", daemon=True).start()


def _pollable(fd: int) -> bool:
    """A pipe, a socket or a terminal: what the event loop can wait on."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


async def open_stdio(
    limit: int = STDIO_LIMIT,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """(reader on stdin, writer on a private copy of stdout); fd 1 then points at stderr.
    ``limit``: the longest line the reader returns; it buffers up to twice that ahead."""
    loop = asyncio.get_running_loop()
    try:
        in_fd, out_fd = sys.stdin.fileno(), sys.stdout.fileno()
    except (AttributeError, OSError, ValueError) as exc:
        raise StdioError(f"stdin/stdout are not usable for the protocol: {exc}") from None
    reader = asyncio.StreamReader(limit=limit)
    if _pollable(in_fd):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    else:  # a regular file, or a device epoll refuses (`</dev/null`: the server hung)
        _feed_from_thread(loop, reader, os.fdopen(os.dup(in_fd), "rb"))
    out = os.fdopen(os.dup(out_fd), "wb", buffering=0)
    protocol: Any
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    except ValueError:  # a regular file
        transport, protocol = _BlockingWriteTransport(out), asyncio.streams.FlowControlMixin(loop)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), out_fd)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)
