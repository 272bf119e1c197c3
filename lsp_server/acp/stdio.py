"""ACP's framing on stdio: one JSON object per line (streams from ``lsp_server.stdio``).

Lines that are not JSON-RPC 2.0 objects, and requests before ``initialize`` (whatever their
method or params), are answered with a JSON-RPC error here, before the SDK sees them
(``payload``: JSON of a bounded size, read by ``lsp_server.json_text``; ``envelope``);
an unreadable answer to one of Kiln's own requests fails that request at once. A client's ``_meta`` is kept away from handler arguments (``meta.shield``),
capability flags are read as ACP reads them (``capabilities.booleans_only``) and
``$/cancel_request`` is made routable on the way (``cancel_request.route``); a request
reusing the id of one not answered yet is refused (``request_ids``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

from kiln_errors.shown import cut
from lsp_server.acp.cancel_request import route
from lsp_server.acp.capabilities import booleans_only
from lsp_server.acp.envelope import (
    BATCH_REFUSED,
    Dropped,
    EnvelopeError,
    MalformedAnswer,
    batch_answers,
    batch_refusals,
    well_formed,
)
from lsp_server.acp.meta import shield
from lsp_server.acp.params_errors import params_error
from lsp_server.acp.payload import HEAD, Refused, Target, head_target, read
from lsp_server.acp.request_ids import ClientRequests
from lsp_server.acp.rpc_errors import not_initialized
from lsp_server.stdio import STDIO_LIMIT, open_stdio

log = logging.getLogger("kiln.acp")
MAX_METHOD = 200  # characters: longer is no method's name, and the SDK echoed it whole


@dataclass
class ClientInput:
    """The checked stdin the SDK reads (``reader``) and when the client closed it (``ended``).

    The SDK refuses to send notifications once its input has ended, so the end reaches it
    (``end``) only after the shutdown has cancelled the running turns and sent their last
    updates: a client that closes stdin and keeps reading still sees its tool calls closed.
    """

    reader: asyncio.StreamReader
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    requests: ClientRequests = field(default_factory=ClientRequests)  # ids not answered yet

    def end(self) -> None:
        self.reader.feed_eof()


class Handshake(Protocol):
    """The agent's side of ``initialize``: whether one succeeded, how many have been handled."""

    initialized: bool
    handshakes: int


async def protocol_streams(
    handshake: Handshake | None = None,
) -> tuple[ClientInput, asyncio.StreamWriter]:
    """(checked stdin, writer on a private copy of stdout); fd 1 then points at stderr."""
    reader, writer = await open_stdio()
    return guard(reader, writer, handshake), writer


_PUMPS: set[asyncio.Task[None]] = set()


def guard(
    raw: asyncio.StreamReader, writer: asyncio.StreamWriter, handshake: Handshake | None = None
) -> ClientInput:
    """Pass on only lines that are JSON objects; answer the rest with a JSON-RPC error.

    The SDK skips unparsable lines with a logged traceback and stops on JSON that is not an
    object; a client's framing mistake should cost it one error response, not the server.
    """
    checked = asyncio.StreamReader(limit=STDIO_LIMIT)
    client = ClientInput(checked)

    async def pump() -> None:
        sent = 0  # initialize requests passed to the SDK

        def before_initialize() -> bool:
            """No initialize has succeeded, and none is on its way (one answered with an error
            does not count: ``handshake.handshakes`` counts those handled)."""
            if handshake is None:
                return sent == 0
            return not handshake.initialized and sent <= handshake.handshakes

        try:
            async for line in _lines(raw, STDIO_LIMIT):
                if isinstance(line, _TooLong):  # answered under its id when the head shows it
                    detail = f"message exceeds the size limit ({STDIO_LIMIT // 2**20} MB)"
                    await _refuse(writer, checked, Refused(-32600, detail, head_target(line.head)))
                    continue
                if not line.strip():
                    continue
                try:  # JSON of at most 100,000 values; NaN a parse error, "\ud800" U+FFFD
                    message, mended = read(line)
                except Refused as refused:
                    await _refuse(writer, checked, refused)
                    continue
                if isinstance(message, list) and message:
                    await _refuse_batch(writer, checked, message)
                    continue
                if not isinstance(message, dict):
                    detail = "a message must be a JSON object"
                    await _refuse(writer, checked, Refused(-32600, detail, Target()))
                    continue
                try:
                    message = well_formed(original := message)
                except EnvelopeError as exc:
                    envelope = Refused(exc.code, str(exc), Target(request=exc.msg_id))
                    await _refuse(writer, checked, envelope)
                    continue
                except Dropped as exc:
                    log.warning("dropped a message: %s", exc)
                    continue
                except MalformedAnswer as exc:  # that request of Kiln's fails now
                    log.warning("an unreadable answer to request %s: %s", exc.msg_id, exc)
                    _fail(checked, exc.msg_id, -32600, f"unreadable answer: {exc}")
                    continue
                # _meta as metadata only; $/cancel_request, which the SDK cannot route itself;
                # capability flags that are not booleans read as false, as ACP's schema does
                routed = route(shield(booleans_only(message)))
                request = "id" in routed and "method" in routed
                if request and routed["method"] != "initialize" and before_initialize():
                    early = not_initialized().to_error_obj()  # before its method or params
                    await _send(writer, {"jsonrpc": "2.0", "id": routed["id"], "error": early})
                    continue
                if request and len(routed["method"]) > MAX_METHOD:  # no method is named so
                    unknown = {"code": -32601, "message": "Method not found",
                               "data": {"method": cut(routed["method"])}}  # fmt: skip
                    await _send(writer, {"jsonrpc": "2.0", "id": routed["id"], "error": unknown})
                    continue
                if (error := params_error(routed)) is not None:  # one line naming the field
                    await _send(writer, {"jsonrpc": "2.0", "id": routed["id"], "error": error})
                    continue
                if request and (in_use := client.requests.refusal(routed)) is not None:
                    await _send(writer, {"jsonrpc": "2.0", "id": routed["id"], "error": in_use})
                    continue  # JSON-RPC ids are unique among requests not answered yet
                sent += int(request and routed["method"] == "initialize")
                if routed is not original or mended:
                    line = json.dumps(routed, separators=(",", ":")).encode("utf-8")
                checked.feed_data(line if line.endswith(b"\n") else line + b"\n")
        finally:
            client.ended.set()  # the SDK sees the end later: ``ClientInput.end``

    task = asyncio.ensure_future(pump())
    _PUMPS.add(task)  # kept alive until the input ends
    task.add_done_callback(_PUMPS.discard)
    return client


async def _refuse(
    writer: asyncio.StreamWriter, checked: asyncio.StreamReader, refused: Refused
) -> None:
    """Answer a line that is no readable message, or fail the request of Kiln's it answers."""
    target = refused.target
    if target.answer is not None:  # that request fails now instead of waiting for its timeout
        log.warning("an unreadable answer to request %s: %s", target.answer, refused.detail)
        _fail(checked, target.answer, refused.code, f"unreadable answer: {refused.detail}")
        return
    log.warning("rejected a malformed message: %s", refused.detail)
    await _send(writer, {"jsonrpc": "2.0", "id": target.request, "error": refused.error()})


def _fail(checked: asyncio.StreamReader, msg_id: int | str, code: int, message: str) -> None:
    """Hand the SDK an error answer to Kiln's request ``msg_id``: it fails now."""
    failed = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
    checked.feed_data(json.dumps(failed, separators=(",", ":")).encode("utf-8") + b"\n")


async def _send(writer: asyncio.StreamWriter, frame: object) -> None:
    """Write one whole frame and wait while the client is behind in reading: refused lines
    cannot pile up answers in memory, and none is lost when the process ends."""
    writer.write((json.dumps(frame, separators=(",", ":")) + "\n").encode("utf-8"))
    with contextlib.suppress(ConnectionError):
        await writer.drain()


async def _refuse_batch(
    writer: asyncio.StreamWriter, checked: asyncio.StreamReader, batch: list[object]
) -> None:
    answers = batch_refusals(batch)
    log.warning("refused a batch of %d messages (%d answered)", len(batch), len(answers))
    for msg_id in batch_answers(batch):  # an answer in a batch: its request fails at once
        log.warning("an unreadable answer to request %s: it came in a batch", msg_id)
        _fail(checked, msg_id, -32600, f"unreadable answer: {BATCH_REFUSED}")
    if answers:
        await _send(writer, answers)


async def flushed(writer: asyncio.StreamWriter, patience: float = 10.0) -> None:
    """Wait until everything written has reached the client, so answers sent last (errors for
    lines that came just before the input ended) are read before the process exits; give up
    when the client takes nothing for ``patience`` seconds, or is gone."""
    transport = writer.transport
    try:
        transport.set_write_buffer_limits(high=0)  # drain() now waits for an empty buffer
    except NotImplementedError:  # written straight to a regular file
        return
    while (left := transport.get_write_buffer_size()) > 0:
        try:
            await asyncio.wait_for(writer.drain(), patience)
        except ConnectionError:
            return
        except TimeoutError:
            if transport.get_write_buffer_size() >= left:
                log.warning("the client read none of the last %d bytes; exiting", left)
                return


_CHUNK = 1 << 20


@dataclass
class _TooLong:
    """A line over the size limit: only its head was kept."""

    head: bytes


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
                    head, line = bytes(line[:HEAD]), bytearray()
            start = stop
            if end >= 0:
                yield _TooLong(head) if head is not None else bytes(line)
                line, head = bytearray(), None
    if head is not None:
        yield _TooLong(head)
    elif line:
        yield bytes(line)
