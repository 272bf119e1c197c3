"""`kiln lsp`: the pygls language server that hosts the agent.

``KilnServer`` holds the state of one connection (the session core, the index, the client's
settings); the handlers are module-level functions in ``features`` (standard LSP) and
``sessions``/``extras`` (the ``kiln/*`` methods, see ``lsp_server/PROTOCOL.md``), registered in
``create_server``. Frames are read in ``frames``, the lifecycle rules live in ``transport``.
Stdout is the JSON-RPC channel: logs go to stderr and, once the client is connected, to
``window/logMessage``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol.language_server import lsp_method

from lsp_server.core import CoreConfig, CoreError, SessionManager, heap
from lsp_server.lsp import composer, extras, features, methods, sessions
from lsp_server.lsp.documents import IndexSync
from lsp_server.lsp.frames import HEADER_LIMIT
from lsp_server.lsp.host import LspFrontend
from lsp_server.lsp.progress import IndexProgress
from lsp_server.lsp.rpc import INTERNAL_ERROR, QuietUserErrors, json_converter
from lsp_server.lsp.textsync import SyncedWorkspace
from lsp_server.lsp.transport import KilnProtocol, parent_poll_seconds, serve
from lsp_server.version import __version__

log = logging.getLogger("kiln.lsp")
# After the last answer is written, how long work still running on a thread (a scan between
# two files, an index write) may take to finish before the process ends without it.
EXIT_GRACE_SECONDS = 5.0


class KilnLspProtocol(KilnProtocol):
    """Adds Kiln's capabilities to the ``initialize`` result (``experimental.kiln``), so a
    client knows the ``kiln/*`` methods without an extra round trip."""

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        self._workspace = SyncedWorkspace.replacing(self.workspace)  # LSP lines and positions
        server = cast(KilnServer, self._server)
        result.capabilities.experimental = {"kiln": extras.capabilities(server)}
        if not self.fm.commands:  # no commands: neither `commands: []` nor the method (-32601)
            result.capabilities.execute_command_provider = None
            self.fm.builtin_features.pop(types.WORKSPACE_EXECUTE_COMMAND, None)
        if server.options.get("hover", True) is False:  # leave hover to another server
            result.capabilities.hover_provider = None
        return result


class KilnServer(LanguageServer):
    """A LanguageServer plus the session core, the index and the client's Kiln settings."""

    protocol: KilnLspProtocol

    def __init__(self) -> None:
        super().__init__(
            "kiln", __version__, protocol_cls=KilnLspProtocol, converter_factory=json_converter
        )
        self.frontend = LspFrontend(self)
        self.config = CoreConfig()
        self.manager: SessionManager | None = None
        self.index_sync: IndexSync | None = None
        self.root: Path | None = None
        self.options: dict[str, Any] = {}
        self.config_error = ""
        self.background: set[asyncio.Task[Any]] = set()
        self._closed = False
        self.started = False  # `initialized` arrived: logging to the client, indexing
        self.index_progress: IndexProgress | None = None  # the first scan's, while it runs

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        """Run ``coro`` in the background, keeping a reference so it is not collected."""
        task = asyncio.get_running_loop().create_task(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        return task

    def core(self) -> SessionManager:
        if self.manager is None:
            raise CoreError("the server is not initialized", hint="send initialize first")
        return self.manager

    async def close_down(self, timeout: float = 30.0) -> None:
        """Cancel running turns (their commands are killed, their answers sent) and close the
        index; safe to call again (``shutdown`` and then the end of the connection)."""
        if not self._closed:
            self._closed = True
            features.end_index_progress(self, "stopped: the server is shutting down")
            if self.manager is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.manager.shutdown(), timeout)
            if self.index_sync is not None:
                self.index_sync.close()
        pending: list[asyncio.Future[Any]] = [
            f
            for f in cast(KilnProtocol, self.protocol).pending_requests()
            if f is not asyncio.current_task() and not f.done()
        ]
        if pending:  # answers still owed (a cancelled prompt answers "cancelled")
            await asyncio.wait(pending, timeout=min(timeout, 5.0))
        for task in list(self.background):
            task.cancel()

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls would pop up "Error in server: <Python error>" in the editor; log it instead.
        An error the client was answered with (an unknown method, bad params) is its own
        mistake, already reported to it: no warning in the editor's log for each one."""
        level = logging.WARNING
        if isinstance(error, JsonRpcException) and error.code != INTERNAL_ERROR:
            level = logging.INFO
        log.log(level, "%s: %s", getattr(source, "__name__", source), error)

    def attach_client_log(self) -> None:
        handler = ClientLogHandler(self, asyncio.get_running_loop())
        handler.setFormatter(logging.Formatter("kiln: %(message)s"))
        logging.getLogger("kiln").addHandler(handler)

    def log_to_client(self, level: int, message: str) -> None:
        if (
            cast(KilnProtocol, self.protocol).shut_down or self._closed
        ):  # the channel may already be closed
            return
        kind = (
            types.MessageType.Error
            if level >= logging.ERROR
            else types.MessageType.Warning
            if level >= logging.WARNING
            else types.MessageType.Info
            if level >= logging.INFO
            else types.MessageType.Log
        )
        self.window_log_message(types.LogMessageParams(type=kind, message=message))


class ClientLogHandler(logging.Handler):
    """Forwards log records to ``window/logMessage`` from any thread."""

    def __init__(self, server: KilnServer, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.INFO)
        self.server, self.loop = server, loop

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
            self.loop.call_soon_threadsafe(self.server.log_to_client, record.levelno, message)
        except Exception:  # noqa: BLE001 - logging must never raise
            pass


def create_server() -> KilnServer:
    server = KilnServer()
    for name, handler in features.FEATURES:
        server.feature(name)(handler)
    methods.register(server, [*sessions.HANDLERS, *extras.HANDLERS, *composer.HANDLERS])
    return server


async def _serve_stdio(server: KilnServer) -> int:
    from lsp_server.stdio import open_stdio

    reader, writer = await open_stdio(HEADER_LIMIT)  # lines are headers; bodies are counted
    return await serve(server, reader, writer, signals=True)


async def _serve_tcp(server: KilnServer, host: str, port: int) -> int:
    """One client over TCP (debugging); a second connection is refused."""
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if done.done() or getattr(on_client, "busy", False):
            writer.close()
            return
        on_client.busy = True  # type: ignore[attr-defined]
        try:
            done.set_result(await serve(server, reader, writer, signals=False))
        except Exception as exc:  # noqa: BLE001
            if not done.done():
                done.set_exception(exc)

    try:
        listener = await asyncio.start_server(on_client, host, port)
    except OSError as exc:  # a port in use, an unknown host: say which address
        raise OSError(exc.errno, exc.strerror or str(exc), f"{host}:{port}") from None
    async with listener:
        return await done


def run(tcp: tuple[str, int] | None = None, log_level: str = "WARNING") -> int:
    """Serve on stdio (or TCP for debugging) until the client exits or leaves."""
    parent_poll_seconds()  # a bad setting is refused before the protocol starts
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root_logger = logging.getLogger()
    handler.setLevel(log_level.upper())
    handler.addFilter(QuietUserErrors())
    root_logger.addHandler(handler)
    root_logger.setLevel(min(logging.INFO, handler.level))
    server = create_server()
    heap.enable()
    main = _serve_stdio(server) if tcp is None else _serve_tcp(server, *tcp)
    try:
        return asyncio.run(_then_leave(main))
    except KeyboardInterrupt:
        return 130


async def _then_leave(main: Any, grace: float | None = None) -> int:
    """Serve, then end the process once the threads still working are done, or ``grace``
    seconds on without them. The client sent `exit` (or left): Python would otherwise wait at
    exit for every worker thread, however long its job (a scan between two files, an index
    write waiting out another process's lock, a search), and an editor waits for the process.
    What a thread had not committed is lost as if the process were killed: SQLite keeps the
    index whole, and the parse workers end with their parent."""
    code: int = await main
    deadline = time.monotonic() + (EXIT_GRACE_SECONDS if grace is None else grace)
    # asyncio's own pool (``to_thread``) is shut down here, shielded: given up on, its join
    # must not hold the loop; anything else still running gets the rest of the time
    executor = asyncio.ensure_future(asyncio.get_running_loop().shutdown_default_executor())
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(executor), max(0.0, deadline - time.monotonic()))
    busy = [
        t for t in threading.enumerate()
        if t is not threading.current_thread() and not t.daemon
    ]  # fmt: skip
    for thread in busy:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = [t.name for t in busy if t.is_alive()]
    if executor.done() and not left:
        return code
    log.warning("exiting without waiting for %s", ", ".join(left) or "a worker thread")
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
