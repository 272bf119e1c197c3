"""ACP's framing on stdio: one JSON object per line (streams from ``lsp_server.stdio``).

Lines that are not JSON-RPC 2.0 objects are answered with a JSON-RPC error here, before the SDK
sees them (``envelope``); a client's ``_meta`` is kept away from handler arguments (``meta.shield``) and
``$/cancel_request`` is made routable on the way (``cancel_request.route``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field

from lsp_server.acp.cancel_request import route
from lsp_server.acp.envelope import Dropped, EnvelopeError, batch_refusals, well_formed
from lsp_server.acp.meta import shield
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
        skipping = False  # inside the rest of a line that was too long
        try:
            while True:
                try:
                    line = await raw.readline()
                except ValueError as exc:  # longer than the limit; the reader dropped it
                    if not skipping:
                        _reject(writer, -32600, "Invalid request", "message exceeds the size limit")
                    # Without its newline in the buffer yet, the reader dropped only a chunk:
                    # the rest of that line follows and is not a message of its own.
                    skipping = "not found" in str(exc)
                    continue
                if not line:
                    break
                if skipping:
                    skipping = not line.endswith(b"\n")
                    continue
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
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
                # _meta as metadata only; $/cancel_request, which the SDK cannot route itself
                routed = route(shield(message))
                if routed is not original:
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
    frame = {"jsonrpc": "2.0", "id": msg_id, "error": error}
    writer.write((json.dumps(frame, separators=(",", ":")) + "\n").encode("utf-8"))


def _refuse_batch(writer: asyncio.StreamWriter, batch: list[object]) -> None:
    answers = batch_refusals(batch)
    log.warning("refused a batch of %d messages (%d answered)", len(batch), len(answers))
    if answers:
        writer.write((json.dumps(answers, separators=(",", ":")) + "\n").encode("utf-8"))
