"""JSON-RPC 2.0 messages and the LSP 3.17 lifecycle around pygls's dispatcher (the frames they
come in are read by ``frames``).

pygls routes messages to handlers; the rules around them live here, because a client is owed an
answer to every request it sends: a body that is not JSON gets -32700 (``id: null``), a message
that is not a JSON-RPC 2.0 object -32600 (an ``id`` of null too: LSP's ids are integers or
strings), a request before ``initialize`` -32002, a request after ``shutdown`` -32600 (and so
one reusing the id of a request of the client's not answered yet), an LSP
notification sent with an id -32601, and params pygls cannot read -32602. A malformed answer to one of the server's own requests is taken as an error answer, so
nothing waits for it forever. A request may omit ``params``.
``exit`` ends the process with 0 after ``shutdown`` and 1 without it.

The server also stops on its own when stdin closes, on SIGTERM/SIGINT, and when the editor
named in ``initialize.processId`` is gone; every way out first cancels running turns (which
kills the commands they started, process group and all) and sends the answers still owed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Generator
from typing import Any
from urllib.parse import urlsplit

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from agent.errors import UsageError
from kiln_errors.setting import number_in
from kiln_errors.shown import shown
from lsp_server import json_text
from lsp_server.core.errors import id_in_use, short
from lsp_server.lsp.frames import INVALID_REQUEST, PARSE_ERROR, read_frames
from lsp_server.lsp.rpc import plain_error, why_unreadable

log = logging.getLogger("kiln.lsp.transport")

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002
BATCH_REFUSED = "Invalid request: LSP has no batches; send each message on its own"
PARENT_POLL_SECONDS = 2.0  # KILN_PARENT_POLL_SECONDS overrides it (tests)
PARENT_POLL_RANGE = (0.01, 3600.0)  # below it the check spins; past it an editor's end goes unseen
DRAIN_SECONDS = 5.0  # bound on cancelling turns and sending their answers when stopping


def _splits(uri: str) -> bool:
    try:
        urlsplit(uri)
    except ValueError:
        return False
    return True


class KilnProtocol(LanguageServerProtocol):
    """pygls's LSP protocol plus the lifecycle rules it leaves to the server."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self.initialize_received = False
        self.shutdown_received = False
        self.shutdown_id: Any = None  # the `shutdown` request, carried out whatever cancels it
        self.exit_code: int | None = None
        self.stop_requested = asyncio.Event()
        self.kiln_notifications: set[str] = set()  # kiln/* methods defined as notifications

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, Any]:
        """pygls's ``initialize`` with the URIs no URI parser reads left out first (``file://[x``:
        "Invalid IPv6 URL"). pygls built its workspace from them before Kiln's handler ran and
        failed the request as an internal error, after which every ``initialize`` was answered
        "already sent": such a root is passed over like one naming no folder (PROTOCOL.md §1)."""
        if params.root_uri is not None and not _splits(params.root_uri):
            log.warning("passed over rootUri %s: not a URI", shown(params.root_uri))
            params.root_uri = None
        if params.workspace_folders:
            kept = [f for f in params.workspace_folders if _splits(f.uri)]
            for folder in params.workspace_folders:
                if folder not in kept:
                    log.warning("passed over workspace folder %s: not a URI", shown(folder.uri))
            params.workspace_folders = kept
        return (yield from super().lsp_initialize(params))

    @property
    def shut_down(self) -> bool:
        """Whether ``shutdown`` was answered (pygls keeps the flag private)."""
        return bool(self._shutdown)

    def pending_requests(self) -> list[asyncio.Future[Any]]:
        """Requests from the client still being handled (their answers are owed)."""
        pending: list[asyncio.Future[Any]] = []
        for future in list(self._request_futures.values()):
            if isinstance(future, asyncio.Future):  # not the ones we sent (concurrent futures)
                pending.append(future)
        return pending

    # -- stopping ------------------------------------------------------------------------------

    def request_stop(self, exit_code: int, why: str) -> None:
        """Stop reading and shut down; the first reason given decides the exit code."""
        if self.exit_code is None:
            self.exit_code = exit_code
            log.info("stopping (%s)", why)
        self.stop_requested.set()

    # -- receiving -----------------------------------------------------------------------------

    def receive(self, body: bytes) -> None:
        """One framed body: answer what cannot be dispatched, dispatch the rest."""
        try:
            data, _ = json_text.loads(body)  # lone surrogates read as U+FFFD
        except json_text.TooManyValues as exc:  # JSON, but no message is that large
            self.reply_error(None, INVALID_REQUEST, f"Invalid request: {exc}")
            return
        except ValueError as exc:  # UnicodeDecodeError included; NaN and 1e400 too
            self.reply_error(None, PARSE_ERROR, f"Parse error: {exc}")
            return
        except RecursionError:  # [[[[…]]]] deeper than the parser's stack
            self.reply_error(None, PARSE_ERROR, "Parse error: JSON nested too deeply")
            return
        if isinstance(data, list) and data:
            self.refuse_batch(data)
            return
        if not isinstance(data, dict):
            self.reply_error(None, INVALID_REQUEST, "Invalid request: expected a JSON object")
            return
        if "method" not in data:
            self.receive_answer(data)
            return
        msg_id = data.get("id")
        if "id" in data and (isinstance(msg_id, bool) or not isinstance(msg_id, int | str)):
            # null included: LSP's request id is `integer | string`, and JSON-RPC keeps null for
            # answers to a message whose id could not be read; nor is it a notification (a
            # notification has no id), so nothing runs
            self.reply_error(
                None, INVALID_REQUEST, "Invalid request: id must be an integer or a string"
            )
            return
        method = data.get("method")
        if data.get("jsonrpc") != "2.0":
            self.reply_error(msg_id, INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"')
            return
        if "method" in data and not isinstance(method, str):
            self.reply_error(msg_id, INVALID_REQUEST, "Invalid request: method must be a string")
            return
        if self.refused(data):
            return
        if method is not None and "params" not in data:
            data["params"] = None  # JSON-RPC lets a request or notification omit params
        try:
            message = self.structure(data)
        except Exception as exc:  # noqa: BLE001 - a malformed message costs its sender one error
            if "id" in data and not self.handles(method):  # whatever its params, not served
                self.reply_error(msg_id, METHOD_NOT_FOUND, f"Method Not Found: {method}")
            elif "id" in data:
                self.reply_error(
                    msg_id, INVALID_PARAMS, f"Invalid params for {method}: {why_unreadable(exc)}"
                )
            else:
                log.warning("dropped a malformed %s notification: %s", method, why_unreadable(exc))
            return
        if method == types.INITIALIZE:
            self.initialize_received = True  # only a readable one counts: a bad one may retry
        self.handle_message(message)

    def refuse_batch(self, batch: list[Any]) -> None:
        """LSP has no batches: each request in one is answered -32600 under its own id, so no
        client waits for it; a batch holding no request costs one answer."""
        answered = False
        for item in batch:
            msg_id = item.get("id") if isinstance(item, dict) and "method" in item else None
            if isinstance(msg_id, int | str) and not isinstance(msg_id, bool):
                self.reply_error(msg_id, INVALID_REQUEST, BATCH_REFUSED)
                answered = True
        if not answered:
            self.reply_error(None, INVALID_REQUEST, BATCH_REFUSED)

    def handles(self, method: Any) -> bool:
        """Whether a handler (pygls's own or the server's) serves ``method``."""
        return method in self.fm.builtin_features or method in self.fm.features

    def receive_answer(self, data: dict[str, Any]) -> None:
        """A message without a method answers one of our requests; it is never answered in turn
        (peers must not trade errors about errors). A malformed one is an error answer, so the
        request waiting for it fails instead of waiting for ever."""
        msg_id = data.get("id")
        if msg_id is None or isinstance(msg_id, bool) or not isinstance(msg_id, int | str):
            if "id" in data or "result" in data or "error" in data:
                log.warning("dropped an answer without a usable id: %.200s", data)
            else:
                self.reply_error(
                    None, INVALID_REQUEST, "Invalid request: a message needs a method or an id"
                )
            return
        problem = ""
        if data.get("jsonrpc") != "2.0":
            problem = '"jsonrpc" must be "2.0"'
        elif "result" not in data and "error" not in data:
            problem = "neither a result nor an error"
        else:
            try:
                message = self.structure(data)
            except Exception as exc:  # noqa: BLE001 - the waiting request hears about it
                problem = str(exc)
        if problem:
            log.warning("malformed answer to our request %s: %s", msg_id, problem)
            error = types.ResponseError(
                code=INVALID_REQUEST, message=f"malformed answer: {problem}"
            )
            self._handle_response(msg_id, None, error)
            return
        self.handle_message(message)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        """A ``shutdown`` is not cancelled: it is under way once received (later requests are
        refused), so answering it -32800 would tell the client it had not happened."""
        if self.shutdown_received and msg_id == self.shutdown_id:
            log.info("shutdown %s is under way: not cancelled", msg_id)
            return
        super()._handle_cancel_notification(msg_id)

    def _handle_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        """An answer to a request the server gave up on (a ``workspace/configuration`` or a
        registration past its wait) is dropped: pygls set it on the cancelled future, which
        raised out of the read loop and ended the server as if the client had left."""
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            self._request_futures.pop(msg_id, None)
            log.info("dropped a late answer to request %s (no longer waited for)", msg_id)
            return
        super()._handle_response(msg_id, result, error)

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        """Every answer passes here: an error's message and hint cut to a readable length, and
        an internal error as one line, without the traceback pygls adds to it (pygls has logged
        it on stderr)."""
        if isinstance(error, types.ResponseError):
            error = plain_error(error)
        super()._send_response(msg_id, result, error)

    def structure(self, data: dict[str, Any]) -> Any:
        """``structure_message`` without pygls's logged traceback (the sender hears about it)."""
        from pygls.protocol import (
            JsonRPCNotification,
            JsonRPCRequestMessage,
            JsonRPCResponseMessage,
        )

        conv = self._converter
        if "id" in data and "method" not in data:
            if "error" in data:
                return conv.structure(data, types.ResponseErrorMessage)
            kind = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
            return conv.structure(data, kind)
        if "id" in data:
            return conv.structure(
                data, self.get_message_type(data["method"]) or JsonRPCRequestMessage
            )
        return conv.structure(data, self.get_message_type(data["method"]) or JsonRPCNotification)

    def refused(self, data: dict[str, Any]) -> bool:
        """Apply the lifecycle rules to a message before it is read; True if it was answered
        (or dropped) here."""
        method, msg_id = data.get("method"), data.get("id")
        if method is None:
            return False  # a response to one of our requests
        if method == types.EXIT:
            self.request_stop(0 if self._shutdown or self.shutdown_received else 1, "exit")
            return True
        if "id" not in data:  # a notification
            if self.initialize_received and not self._shutdown:
                return False
            log.info(
                "dropped %s (%s)", method, "shut down" if self._shutdown else "not initialized"
            )
            return True
        if self._shutdown or self.shutdown_received:  # also while `shutdown` cancels turns
            self.reply_error(msg_id, INVALID_REQUEST, f"{method}: the server is shut down")
        elif method == types.INITIALIZE and self.initialize_received:
            self.reply_error(msg_id, INVALID_REQUEST, "initialize was already sent")
        elif method != types.INITIALIZE and not self.initialize_received:
            self.reply_error(msg_id, SERVER_NOT_INITIALIZED, f"{method}: send initialize first")
        elif is_lsp_notification(method) or method in self.kiln_notifications:
            # an LSP one read as a notification leaves its id unanswered; a kiln/* one (cancel)
            # has no request form: not run, as `kiln acp` does (PROTOCOL.md §7)
            self.reply_error(
                msg_id, METHOD_NOT_FOUND, f"{method} is a notification: send it without an id"
            )
        elif msg_id is not None and isinstance(self._request_futures.get(msg_id), asyncio.Future):
            # the client's own request under that id is not answered yet: serving this one too
            # would answer both under one id (and a $/cancelRequest of it could name either)
            message, hint = id_in_use(msg_id)
            self.reply_error(msg_id, INVALID_REQUEST, message, hint)
        else:
            if method == types.SHUTDOWN:  # received: an `exit` right behind it still exits 0
                self.shutdown_received = True
                self.shutdown_id = msg_id
            return False
        return True

    def reply_error(self, msg_id: Any, code: int, message: str, hint: str = "") -> None:
        message = short(message)  # it may quote a method name of any length
        log.info("answered %s with %s: %s", msg_id, code, message)
        error: dict[str, Any] = {"code": code, "message": message}
        if hint:
            error["data"] = {"hint": hint}
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})


def is_lsp_notification(method: str) -> bool:
    """Whether LSP 3.17 defines ``method`` as a notification (``textDocument/didOpen``…)."""
    entry = types.METHOD_TO_TYPES.get(method)
    return entry is not None and entry[0].__name__.endswith("Notification")


async def serve(
    server: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, signals: bool
) -> int:
    """Serve one client until it exits or leaves (or a signal arrives); returns the exit code."""
    protocol: KilnProtocol = server.protocol
    protocol.set_writer(writer, include_headers=True)
    loop = asyncio.get_running_loop()
    if signals:
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, protocol.request_stop, 0, signal.Signals(sig).name)
    reading = asyncio.ensure_future(read_frames(protocol, reader, writer))
    stopping = asyncio.ensure_future(protocol.stop_requested.wait())
    await asyncio.wait([reading, stopping], return_when=asyncio.FIRST_COMPLETED)
    if reading.done():
        protocol.request_stop(0, "the client closed the connection")
    reading.cancel()
    stopping.cancel()
    await server.close_down(DRAIN_SECONDS)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(writer.drain(), 2)
    writer.close()
    return protocol.exit_code or 0


async def watch_parent(protocol: KilnProtocol, pid: int) -> None:
    """End the server when the editor that started it is gone (LSP ``processId``)."""
    interval = parent_poll_seconds()
    while not protocol.stop_requested.is_set():
        await asyncio.sleep(interval)
        if not process_alive(pid):
            log.warning("the editor (process %s) is gone; shutting down", pid)
            protocol.request_stop(0 if protocol.shut_down else 1, f"process {pid} is gone")
            return


def parent_poll_seconds() -> float:
    """``KILN_PARENT_POLL_SECONDS``, else 2; `kiln lsp` reads it before serving, so a bad value
    is one line and exit 2 (a bare ``float()`` crashed the watch at ``initialize``)."""
    raw = os.environ.get("KILN_PARENT_POLL_SECONDS", "").strip()
    value = number_in(raw, *PARENT_POLL_RANGE) if raw else PARENT_POLL_SECONDS
    if value is None:
        low, high = PARENT_POLL_RANGE
        raise UsageError(
            f"KILN_PARENT_POLL_SECONDS {raw[:40]!r} is not a number of seconds from {low:g} "
            f"to {high:,g}",
            hint=f"unset it for the default of {PARENT_POLL_SECONDS:g}",
        )
    return value


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: no pid is that large
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True
