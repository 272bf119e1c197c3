"""`kiln acp` as a process: settings from the environment, serving stdio, an orderly end.

The server runs until the client closes stdin (running requests get a grace period, then turns
are cancelled and their answers flushed) or until SIGTERM/SIGINT (the same, without the grace).
Stdout carries only protocol frames (``stdio``); logs go to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Mapping
from typing import Any

from acp import RequestError
from acp.core import AgentSideConnection
from pydantic import ValidationError

from agent.errors import UsageError
from lsp_server.acp.server import GRACE_SECONDS, KilnAcpAgent
from lsp_server.acp.stdio import flushed, protocol_streams
from lsp_server.core import CoreConfig, CoreError, heap


def config_from_env(base: CoreConfig | None = None) -> CoreConfig:
    """Server defaults: ``KILN_ACP_MODE``, ``KILN_ACP_PERMISSION_TIMEOUT`` and
    ``KILN_ACP_MCP_TIMEOUT`` (seconds)."""
    options: dict[str, Any] = {}
    for name, key in (("KILN_ACP_MODE", "mode"), ("KILN_ACP_PERMISSION_TIMEOUT",
                      "permissionTimeout"), ("KILN_ACP_MCP_TIMEOUT", "mcpStartTimeout")):  # fmt: skip
        if not os.environ.get(name):
            continue
        options[key] = os.environ[name]
        try:  # one at a time, so the line names the variable to fix
            CoreConfig.from_options({key: options[key]}, base)
        except CoreError as exc:
            raise UsageError(f"bad {name}: {exc}", hint=exc.hint or None) from None
    return CoreConfig.from_options(options, base)


async def serve_stdio(agent: KilnAcpAgent | None = None) -> None:
    """Serve until stdin closes or SIGTERM/SIGINT arrives, then shut down in order."""
    agent = agent or KilnAcpAgent(config=config_from_env())
    client, writer = await protocol_streams(agent)
    observers = [*agent.outgoing.connect(writer), client.requests.observe]
    # The SDK types every Agent method as required, but answers method-not-found for one an
    # agent lacks (fork_session, resume_session, close_session, ...): kiln offers none of them.
    conn = AgentSideConnection(
        agent,  # type: ignore[arg-type]
        writer,  # type: ignore[arg-type]
        client.reader,
        listening=False,
        observers=observers,
    )
    loop = asyncio.get_running_loop()
    listening = asyncio.ensure_future(conn.listen())
    hung_up = asyncio.ensure_future(client.ended.wait())
    signalled = asyncio.Event()  # the SDK's listener swallows its cancellation: not a sign

    def on_signal() -> None:
        signalled.set()
        listening.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
    try:
        await asyncio.wait([listening, hung_up], return_when=asyncio.FIRST_COMPLETED)
    finally:
        hung_up.cancel()
        # The SDK still counts the client as connected here, so the cancelled turns' last
        # updates reach it before their answers; only then does it see the end of the input.
        await agent.shutdown(grace=0.0 if signalled.is_set() else GRACE_SECONDS)
        client.end()
        with contextlib.suppress(ConnectionError):  # a client gone: its answers have nowhere to go
            await conn.close()
        await flushed(writer)  # every answer reaches a client that reads slowly


class _QuietUnknownNotifications(logging.Filter):
    """The SDK logs a traceback for a notification no handler knows, and for one whose params
    it cannot read; JSON-RPC has the first ignored (one INFO line, dropped at the default level)
    and nobody is owed an answer for the second (one WARNING line: the client's mistake). It
    also logs one for each answer it could not write to a client that closed its end: the
    client is gone, as when it closes stdin (one INFO line each)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, ConnectionError):  # the client is gone: its end of stdout closed
            record.msg, record.args = "client gone: %s (%s)", (exc, record.getMessage())
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
            return logging.getLogger().isEnabledFor(logging.INFO)
        if isinstance(exc, ValidationError) and "notification" in str(record.msg):
            problem: Mapping[str, Any] = next(iter(exc.errors()), {})
            where = ".".join(str(part) for part in problem.get("loc", ())) or "params"
            record.msg = "ignored a malformed %s notification: %s: %s"
            record.args = (*(record.args or ()), where, problem.get("msg", exc))
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            return True
        if not (isinstance(exc, RequestError) and exc.code == -32601):
            return True
        record.msg, record.exc_info, record.exc_text = "ignored unknown notification %s", None, None
        record.levelno, record.levelname = logging.INFO, "INFO"
        return logging.getLogger().isEnabledFor(logging.INFO)


def run_stdio() -> None:
    """Entry point of `kiln acp`: serve one ACP client on stdin/stdout until it hangs up."""
    level = os.environ.get("KILN_LOG_LEVEL", "").strip().upper() or "WARNING"
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise UsageError(
            f"bad KILN_LOG_LEVEL {level.lower()!r}",
            hint="use one of: debug, info, warning, error, critical",
        )
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level, logging.WARNING),
        format="kiln acp: %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger().addFilter(_QuietUnknownNotifications())
    config_from_env()  # a bad KILN_ACP_* value is a one-line error before the protocol starts
    heap.enable()
    try:
        asyncio.run(serve_stdio())
    except KeyboardInterrupt:
        pass
