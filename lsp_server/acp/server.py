"""`kiln acp`: the Agent Client Protocol server over stdio, a thin mapping over the shared core.

ACP clients (Zed, JetBrains, Neovim plugins) start this process and speak JSON-RPC on its
stdin/stdout. Sessions, turns, permission timeouts and the event→update mapping live in
``lsp_server.core``; this module answers the ACP methods, replays stored conversations on
``session/load`` and turns the core's typed errors into JSON-RPC errors. Stdout carries only
protocol frames (see ``stdio``); logs go to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from acp import PROTOCOL_VERSION, RequestError
from acp.core import AgentSideConnection
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
)

from agent.errors import KilnError, SessionNotFound, UsageError
from agent.session import Session
from agent.session_store import kiln_home
from agent.workspace import check_root
from lsp_server.acp.frontend import AcpFrontend
from lsp_server.acp.stdio import protocol_streams
from lsp_server.core import (
    NOT_ALLOWED,
    SESSION_NOT_FOUND,
    CoreConfig,
    CoreError,
    InvalidParams,
    SessionManager,
    TurnInProgress,
    acp_stop_reason,
    uri_to_path,
)
from lsp_server.core.prompts import url_cwd
from lsp_server.version import __version__

log = logging.getLogger("kiln.acp")

# Permission modes a client can switch between (``ci`` is for headless runs only).
MODES: dict[str, tuple[str, str]] = {
    "ask": ("Ask", "Reads are free; edits and commands ask first."),
    "auto-edit": ("Auto-edit", "Edits are applied without asking; commands ask."),
    "yolo": ("Yolo", "Everything is allowed without asking (paths stay in the workspace)."),
}
# Listed only for a session already in it (KILN_ACP_MODE=ci or ``_meta``), so the mode state
# a client shows is the one the session runs in.
CI_MODE = ("CI", "No questions: workspace edits apply, risky commands are denied.")

INTERNAL_ERROR = -32603
INVALID_REQUEST = -32600
RESOURCE_NOT_FOUND = -32002
GRACE_SECONDS = 2.0  # after the client hangs up, running requests may finish on their own
DRAIN_SECONDS = 5.0  # then turns are cancelled and their answers flushed within this bound

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def rpc_errors(fn: F) -> F:
    """Turn Kiln's typed errors into JSON-RPC errors: one line and a hint, no traceback."""

    @functools.wraps(fn)
    async def wrapper(self: KilnAcpAgent, *args: Any, **kwargs: Any) -> Any:
        if not self.initialized and fn.__name__ != "initialize":  # ACP: -32600 until then
            raise RequestError(
                INVALID_REQUEST, "send initialize first", {"hint": "the ACP handshake comes first"}
            )
        task = asyncio.current_task()
        if task is not None:
            self.inflight.add(task)
        try:
            return await fn(self, *args, **kwargs)
        except RequestError:
            raise
        except CoreError as exc:
            raise _request_error(exc.code, exc) from None
        except SessionNotFound as exc:
            raise _request_error(SESSION_NOT_FOUND, exc) from None
        except KilnError as exc:  # e.g. no model provider configured: the hint says how
            raise _request_error(INTERNAL_ERROR, exc) from None
        finally:
            if task is not None:
                self.inflight.discard(task)

    return wrapper  # type: ignore[return-value]


def _request_error(code: int, exc: BaseException) -> RequestError:
    hint = getattr(exc, "hint", "") or ""
    if code == SESSION_NOT_FOUND:  # ACP's own code for an unknown session
        code = RESOURCE_NOT_FOUND
    return RequestError(code, str(exc), {"hint": hint} if hint else None)


def config_from_env(base: CoreConfig | None = None) -> CoreConfig:
    """Server defaults: ``KILN_ACP_MODE`` and ``KILN_ACP_PERMISSION_TIMEOUT`` (seconds)."""
    options: dict[str, Any] = {}
    if os.environ.get("KILN_ACP_MODE"):
        options["mode"] = os.environ["KILN_ACP_MODE"]
    if os.environ.get("KILN_ACP_PERMISSION_TIMEOUT"):
        options["permissionTimeout"] = os.environ["KILN_ACP_PERMISSION_TIMEOUT"]
    try:
        return CoreConfig.from_options(options, base)
    except CoreError as exc:
        raise UsageError(f"bad KILN_ACP_* setting: {exc}", hint=exc.hint or None) from None


class KilnAcpAgent:
    """The ``acp.Agent`` implementation; one instance per connection."""

    def __init__(self, *, config: CoreConfig | None = None, store: Any = None) -> None:
        self.config = config or CoreConfig()
        self.store = store
        self.frontend: AcpFrontend | None = None
        self.manager: SessionManager | None = None
        self.inflight: set[asyncio.Task[Any]] = set()  # request handlers still running
        self.initialized = False

    def on_connect(self, conn: Any) -> None:
        self.frontend = AcpFrontend(conn)
        self.manager = SessionManager(self.frontend, config=self.config, store=self.store)

    @property
    def core(self) -> SessionManager:
        if self.manager is None:
            raise RequestError.internal_error({"details": "not connected"})
        return self.manager

    # -- lifecycle ----------------------------------------------------------------------------

    @rpc_errors
    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        assert self.frontend is not None
        if self.initialized:  # capabilities are negotiated once per connection
            raise RequestError(
                INVALID_REQUEST,
                "initialize was already sent on this connection",
                {"hint": "start a new `kiln acp` process to negotiate again"},
            )
        self.initialized = True
        self.frontend.set_capabilities(client_capabilities)
        if isinstance(kwargs.get("kiln"), dict):  # _meta: {"kiln": {...CoreConfig options}}
            self.core.config = CoreConfig.from_options(kwargs["kiln"], self.core.config)
        name = getattr(client_info, "name", "") or "an ACP client"
        log.info("initialize from %s (protocol %s)", name, protocol_version)
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,  # the only one spoken: the latest supported
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="kiln", title="Kiln", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise RequestError.invalid_params(
            {"message": f"unknown auth method {method_id!r}", "hint": "kiln needs no login"}
        )

    # -- sessions -----------------------------------------------------------------------------

    @rpc_errors
    async def new_session(
        self, cwd: str, mcp_servers: Any = None, additional_directories: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        _check_absolute(cwd)
        if mcp_servers:
            log.info(
                "ignoring %d MCP server(s) from the client; see .kiln/mcp.json", len(mcp_servers)
            )
        options = kwargs.get("kiln") if isinstance(kwargs.get("kiln"), dict) else None
        session = await self.core.new_session(cwd, options)
        self._track(session)
        log.info("session %s in %s", session.id, session.root)
        return NewSessionResponse(session_id=session.id, modes=_modes(session))

    @rpc_errors
    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Any = None,
        additional_directories: Any = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        _check_absolute(cwd)
        try:  # the cwd a client names is refused as for session/new, even if the stored root is fine
            check_root(Path(cwd), kiln_home())
        except UsageError as exc:
            raise CoreError(str(exc), hint=exc.hint, code=NOT_ALLOWED) from None
        if self.core.is_busy(session_id):
            raise TurnInProgress("the session is running a turn", hint="cancel it or wait")
        session = await self.core.load_session(session_id)
        if Path(cwd).resolve() != session.root:
            log.warning("session %s belongs to %s, not %s", session_id, session.root, cwd)
        self._track(session)
        assert self.frontend is not None
        for update in self.core.history(session.id):
            await self.frontend.send_now(session.id, update)
        return LoadSessionResponse(modes=_modes(session))

    @rpc_errors
    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        if cwd is not None:
            _check_absolute(cwd)
        rows = self.core.list_sessions(cwd)  # every stored session when cwd is None
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=r["sessionId"],
                    cwd=r["cwd"],
                    title=r["title"] or None,
                    updated_at=r["updatedAt"],
                    field_meta={"kiln": {"mode": r["mode"]}},  # the persisted permission mode
                )
                for r in rows
            ]
        )

    @rpc_errors
    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        session = self.core.get(session_id)
        modes = _available(session)
        if mode_id not in modes:
            raise InvalidParams(f"unknown mode {mode_id!r}", hint=f"use one of: {', '.join(modes)}")
        session.set_mode(mode_id)
        return SetSessionModeResponse()

    def _track(self, session: Session) -> None:
        assert self.frontend is not None
        self.frontend.roots[session.id] = session.root

    # -- turns --------------------------------------------------------------------------------

    @rpc_errors
    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        blocks = [
            b.model_dump(mode="json", by_alias=True, exclude_none=True)
            if hasattr(b, "model_dump")
            else b
            for b in prompt
        ]
        try:
            reason = await self.core.prompt(session_id, await self._embed_links(session_id, blocks))
        finally:
            if self.frontend is not None:
                await self.frontend.flush(session_id)  # all streamed text before the answer
                if not self.core.is_busy(session_id):
                    self.frontend.release(session_id)
        return PromptResponse(stop_reason=acp_stop_reason(reason))  # type: ignore[arg-type]

    async def _embed_links(self, session_id: str, blocks: list[Any]) -> list[Any]:
        """Resolve ``resource_link``s to workspace files through the client, so an attached
        file reaches the model with its unsaved text (the core reads links from the disk)."""
        assert self.frontend is not None
        root = self.frontend.roots.get(session_id)
        if root is None or not self.frontend.can_read:
            return blocks
        out = []
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "resource_link":
                path = uri_to_path(str(block.get("uri", "")))
                path = path.resolve() if path is not None else None
                if path is not None and (path == root or root in path.parents):
                    text = await self.frontend.client_text(session_id, path)
                    if text is not None:
                        block = {
                            "type": "resource",
                            "resource": {"uri": block["uri"], "text": text},
                        }
            out.append(block)
        return out

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """A notification: nothing to answer, so an unknown session is only logged."""
        try:
            self.core.cancel(session_id)
        except CoreError as exc:
            log.info("session/cancel ignored: %s", exc)

    async def drain(self, timeout: float) -> None:
        """Wait (bounded) for running requests to finish and send their responses."""
        pending = [t for t in self.inflight if t is not asyncio.current_task()]
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    async def shutdown(self, grace: float = GRACE_SECONDS) -> None:
        """The client hung up: let quick requests finish, then cancel turns so each prompt
        answers "cancelled" and every transcript ends consistent."""
        await self.drain(grace)
        if self.manager is not None:
            await self.manager.shutdown()
        await self.drain(DRAIN_SECONDS)


def _check_absolute(cwd: Any) -> None:
    if isinstance(cwd, str) and (error := url_cwd(cwd, file_ok=False)) is not None:
        raise InvalidParams(error, hint="ACP requires absolute paths")
    if not isinstance(cwd, str) or not Path(cwd).is_absolute():
        raise InvalidParams(
            f"cwd must be an absolute path, got {cwd!r}", hint="ACP requires absolute paths"
        )


def _available(session: Session) -> dict[str, tuple[str, str]]:
    return {**MODES, "ci": CI_MODE} if session.mode == "ci" else MODES


def _modes(session: Session) -> SessionModeState:
    modes = _available(session)
    return SessionModeState(
        current_mode_id=session.mode if session.mode in modes else "ask",
        available_modes=[
            SessionMode(id=mode, name=name, description=text)
            for mode, (name, text) in modes.items()
        ],
    )


# ---- stdio --------------------------------------------------------------------------------


async def serve_stdio(agent: KilnAcpAgent | None = None) -> None:
    """Serve until stdin closes or SIGTERM/SIGINT arrives, then shut down in order."""
    agent = agent or KilnAcpAgent(config=config_from_env())
    reader, writer = await protocol_streams()
    conn = AgentSideConnection(agent, writer, reader, listening=False)  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    listening = asyncio.ensure_future(conn.listen())
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, listening.cancel)
    try:
        await asyncio.wait([listening])
    finally:
        await agent.shutdown(grace=0.0 if listening.cancelled() else GRACE_SECONDS)
        await conn.close()


class _QuietUnknownNotifications(logging.Filter):
    """The SDK logs a traceback for a notification no handler knows; JSON-RPC has it ignored,
    so it becomes one INFO line (dropped at the default level)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not (isinstance(exc, RequestError) and exc.code == -32601):
            return True
        record.msg, record.exc_info, record.exc_text = "ignored unknown notification %s", None, None
        record.levelno, record.levelname = logging.INFO, "INFO"
        return logging.getLogger().isEnabledFor(logging.INFO)


def run_stdio() -> None:
    """Entry point of `kiln acp`: serve one ACP client on stdin/stdout until it hangs up."""
    level = os.environ.get("KILN_LOG_LEVEL", "WARNING").upper()
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
    try:
        asyncio.run(serve_stdio())
    except KeyboardInterrupt:
        pass
