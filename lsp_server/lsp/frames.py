"""LSP's ``Content-Length`` frames read off a client's stream, within bounds a hostile client
cannot push past.

A header of thousands of digits is refused without turning it into an int (Python refuses to,
past 4,300 digits, and the read loop died); a body over 50 MB is read through and refused; a
client that sends requests but leaves the answers unread is no longer read from once 16 MB of
them wait for it (the answers were buffered without bound), until it has read them. What a body
holds is the protocol's business (``transport.KilnProtocol.receive``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

log = logging.getLogger("kiln.lsp.frames")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
MAX_BODY = 50 * 1024 * 1024
MAX_LENGTH_DIGITS = 12  # a Content-Length past this is no body anyone sends (nor can skip)
MAX_UNREAD = 16 * 1024 * 1024  # answers waiting for the client before it is no longer read
HEADER_LIMIT = 1024 * 1024  # a header line's bytes; also what the reader buffers ahead


class Receiver(Protocol):
    def receive(self, body: bytes) -> None: ...

    def reply_error(self, msg_id: Any, code: int, message: str) -> None: ...


async def read_frames(
    protocol: Receiver, reader: asyncio.StreamReader, writer: asyncio.StreamWriter | None = None
) -> None:
    """``Content-Length`` framed bodies from ``reader`` to ``protocol`` until EOF (or until the
    client, its answers unread, is gone); each frame only once ``writer`` has room."""
    while True:
        if writer is not None and not await room_to_answer(writer):
            return
        length = await _content_length(protocol, reader)
        if length is None:
            return
        if not length.isascii() or not length.isdigit():
            protocol.reply_error(None, PARSE_ERROR, "Parse error: missing Content-Length header")
            continue
        if len(length.lstrip("0")) > MAX_LENGTH_DIGITS:  # read on to the next header
            protocol.reply_error(None, INVALID_REQUEST, "Invalid request: Content-Length too large")
            continue
        size = int(length)
        try:
            if size > MAX_BODY:
                while size:
                    size -= len(await reader.readexactly(min(size, 1 << 20)))
                protocol.reply_error(None, INVALID_REQUEST, "Invalid request: body over 50 MB")
                continue
            body = await reader.readexactly(size)
        except asyncio.IncompleteReadError:
            return
        protocol.receive(body)


async def _content_length(protocol: Receiver, reader: asyncio.StreamReader) -> str | None:
    """The ``Content-Length`` value of the next header block ("" if it has none); None at EOF."""
    headers: dict[str, str] = {}
    while True:
        try:
            line = await reader.readline()
        except ValueError:  # a header line over the reader's limit
            protocol.reply_error(None, PARSE_ERROR, "Parse error: header line too long")
            continue
        if not line:
            return None
        if not line.strip():
            if headers:
                return headers.get("content-length", "")
            continue  # stray blank line between messages
        text = line.decode("ascii", "replace")
        at = text.lower().rfind("content-length:")
        if at > 0:  # the tail of a body whose Content-Length was too short runs into it
            headers.clear()
            text = text[at:]
        name, _, value = text.partition(":")
        headers[name.strip().lower()] = value.strip()


async def room_to_answer(writer: asyncio.StreamWriter) -> bool:
    """Wait while ``MAX_UNREAD`` or more of our answers wait for the client to read them; False
    when the client went away meanwhile. A transport that writes at once has nothing waiting."""
    try:
        unread = writer.transport.get_write_buffer_size()
    except NotImplementedError:  # a regular file: written as sent
        return True
    if unread < MAX_UNREAD:
        return True
    log.warning(
        "the client leaves %d MB of answers unread: not reading from it until it reads them",
        unread // 2**20,
    )
    try:
        await writer.drain()  # until the transport's low-water mark
    except ConnectionError:
        return False
    log.warning("the client read its answers: reading from it again")
    return True
