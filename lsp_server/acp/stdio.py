"""ACP's framing on stdio: one JSON object per line (streams from ``lsp_server.stdio``).

Lines that are not JSON-RPC 2.0 objects are answered with a JSON-RPC error here, before the SDK
sees them (``envelope``); a client's ``_meta`` is kept away from handler arguments (``meta.shield``),
capability flags are read as ACP reads them (``capabilities.booleans_only``) and
``$/cancel_request`` is made routable on the way (``cancel_request.route``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from lsp_server import json_text
from lsp_server.acp.cancel_request import route
from lsp_server.acp.capabilities import booleans_only
from lsp_server.acp.envelope import Dropped, EnvelopeError, batch_refusals, well_formed
from lsp_server.acp.meta import shield
from lsp_server.acp.params_errors import params_error
from lsp_server.stdio import STDIO_LIMIT, open_stdio

log = logging.getLogger("kiln.acp")


@dataclass
class ClientInput:
    """The checked stdin the SDK reads (``reader``) and when the client closed it (``ended``).

    The SDK refuses to send notifications once its input has ended, so the end reaches it
    (``end``) only after the shutdown has cancelled the running turns and sent their last
    updates: a client that closes stdin and keeps reading still sees its tool calls closed.
    """

    reader: asyncio.StreamReader
    ended: asyncio.Event = field(default_factory=asyncio.Event)

    def end(self) -> None:
        self.reader.feed_eof()


async def protocol_streams() -> tuple[ClientInput, asyncio.StreamWriter]:
    """(checked stdin, writer on a private copy of stdout); fd 1 then points at stderr."""
    reader, writer = await open_stdio()
    return guard(reader, writer), writer


_PUMPS: set[asyncio.Task[None]] = set()


def guard(raw: asyncio.StreamReader, writer: asyncio.StreamWriter) -> ClientInput:
    """Pass on only lines that are JSON objects; answer the rest with a JSON-RPC error.

    The SDK skips unparsable lines with a logged traceback and stops on JSON that is not an
    object; a client's framing mistake should cost it one error response, not the server.
    """
    checked = asyncio.StreamReader(limit=STDIO_LIMIT)
    client = ClientInput(checked)

    async def pump() -> None:
        try:
            async for line in _lines(raw, STDIO_LIMIT):
                if isinstance(line, _TooLong):  # answered under its id when the head shows it
                    detail = f"message exceeds the size limit ({STDIO_LIMIT // 2**20} MB)"
                    _reject(writer, -32600, "Invalid request", detail, line.request_id())
                    continue
                if not line.strip():
                    continue
                try:  # NaN, Infinity and 1e400 are parse errors; lone surrogates U+FFFD
                    message, mended = json_text.loads(line)
                except json_text.TooManyValues as exc:  # JSON, but no message is that large
                    _reject(writer, -32600, "Invalid request", str(exc))
                    continue
                except ValueError as exc:
                    _reject(writer, -32700, "Parse error", str(exc))
                    continue
                except RecursionError:  # [[[[…]]]] deeper than the parser's stack
                    _reject(writer, -32700, "Parse error", "JSON nested too deeply")
                    continue
                if isinstance(message, list) and message:
                    _refuse_batch(writer, message)
                    continue
                if not isinstance(message, dict):
                    _reject(writer, -32600, "Invalid request", "a message must be a JSON object")
                    continue
                try:
                    message = well_formed(original := message)
                except EnvelopeError as exc:
                    _reject(writer, exc.code, "Invalid request", str(exc), exc.msg_id)
                    continue
                except Dropped as exc:
                    log.warning("dropped a message: %s", exc)
                    continue
                # _meta as metadata only; $/cancel_request, which the SDK cannot route itself;
                # capability flags that are not booleans read as false, as ACP's schema does
                routed = route(shield(booleans_only(message)))
                if (error := params_error(routed)) is not None:  # one line naming the field
                    _answer(writer, {"jsonrpc": "2.0", "id": routed["id"], "error": error})
                    continue
                if routed is not original or mended:
                    line = json.dumps(routed, separators=(",", ":")).encode("utf-8")
                checked.feed_data(line if line.endswith(b"\n") else line + b"\n")
        finally:
            client.ended.set()  # the SDK sees the end later: ``ClientInput.end``

    task = asyncio.ensure_future(pump())
    _PUMPS.add(task)  # kept alive until the input ends
    task.add_done_callback(_PUMPS.discard)
    return client


def _reject(
    writer: asyncio.StreamWriter, code: int, message: str, detail: str, msg_id: object = None
) -> None:
    log.warning("rejected a malformed message: %s", detail)
    error = {"code": code, "message": message, "data": {"details": detail}}
    _answer(writer, {"jsonrpc": "2.0", "id": msg_id, "error": error})


def _answer(writer: asyncio.StreamWriter, frame: object) -> None:
    writer.write((json.dumps(frame, separators=(",", ":")) + "\n").encode("utf-8"))


def _refuse_batch(writer: asyncio.StreamWriter, batch: list[object]) -> None:
    answers = batch_refusals(batch)
    log.warning("refused a batch of %d messages (%d answered)", len(batch), len(answers))
    if answers:
        _answer(writer, answers)


_CHUNK = 1 << 20
_HEAD = 4096  # bytes of an over-long line kept to find its id
# The leading members of a message whose values are plain: a request's id and method come
# before its params in what clients send ({"jsonrpc": "2.0", "id": 5, "method": ..., "params": ...).
_MEMBER = re.compile(rb'\s*"(jsonrpc|id|method)"\s*:\s*(-?\d+|"[^"\\]*")\s*,')


@dataclass
class _TooLong:
    """A line over the size limit: only its head was kept."""

    head: bytes

    def request_id(self) -> object:
        """The id of a request whose id and method lead the line; else None (an answer to one
        of ours, or members in another order: not guessed)."""
        opening = self.head.find(b"{")
        if opening < 0 or self.head[:opening].strip():
            return None
        members: dict[bytes, bytes] = {}
        at = opening + 1
        while (member := _MEMBER.match(self.head, at)) is not None:
            members[member.group(1)] = member.group(2)
            at = member.end()
        if b"id" not in members or b"method" not in members:
            return None
        return json.loads(members[b"id"])


async def _lines(raw: asyncio.StreamReader, limit: int) -> AsyncIterator[bytes | _TooLong]:
    """The input's lines; one over ``limit`` bytes is read through to its end and yielded as
    ``_TooLong`` with its head, so it costs one answer and its tail is no message of its own."""
    line = bytearray()
    head: bytes | None = None  # set while inside a line over the limit
    while chunk := await raw.read(_CHUNK):
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            stop = len(chunk) if end < 0 else end + 1
            if head is None:
                line += chunk[start:stop]
                if len(line) > limit:
                    head, line = bytes(line[:_HEAD]), bytearray()
            start = stop
            if end >= 0:
                yield _TooLong(head) if head is not None else bytes(line)
                line, head = bytearray(), None
    if head is not None:
        yield _TooLong(head)
    elif line:
        yield bytes(line)
