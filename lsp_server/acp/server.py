"""`kiln acp`: the Agent Client Protocol server over stdio, a thin mapping over the shared core.

ACP clients (Zed, JetBrains, Neovim plugins) start this process and speak JSON-RPC on its
stdin/stdout. Sessions, turns, permission timeouts and the event→update mapping live in
``lsp_server.core``; this module answers the ACP methods, replays stored conversations on
``session/load``; ``rpc_errors`` turns the core's typed errors into JSON-RPC errors. The
process around it (stdio, signals, shutdown) is ``process``; the modes it offers are ``modes``.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionModeResponse,
)

from agent.errors import UsageError
from agent.session import Session
from agent.session_store import kiln_home
from agent.workspace import check_root
from lsp_server.acp import builtins
from lsp_server.acp.cancel_request import EXTENSION_NAME, REQUEST_ID_KEY, PromptRequests
from lsp_server.acp.client_paths import as_client_names
from lsp_server.acp.commands import Commands, builtin, expand
from lsp_server.acp.frontend import AcpFrontend, message_chunk, replayed, thought_chunk
from lsp_server.acp.mcp_params import MCP_HTTP, MCP_SSE, parse_mcp_servers
from lsp_server.acp.meta import RAW_MCP_KEY, kiln_options
from lsp_server.acp.modes import available, mode_state
from lsp_server.acp.outgoing import OutgoingRequests
from lsp_server.acp.rpc_errors import INVALID_REQUEST, rpc_errors
from lsp_server.core import (
    NOT_ALLOWED,
    CoreConfig,
    CoreError,
    InvalidParams,
    SessionManager,
    TurnInProgress,
    acp_stop_reason,
    uri_to_path,
)
from lsp_server.core.late_edit import late_edit_note, late_edit_status
from lsp_server.core.prompts import link_range, resolved, url_cwd
from lsp_server.core.session_folder import usable_folder
from lsp_server.core.session_pages import PAGE_SIZE, after, cursor_for
from lsp_server.version import __version__

log = logging.getLogger("kiln.acp")

GRACE_SECONDS = 2.0  # after the client hangs up, running requests may finish on their own
DRAIN_SECONDS = 5.0  # then turns are cancelled and their answers flushed within this bound


class KilnAcpAgent:
    """The ``acp.Agent`` implementation; one instance per connection."""

    def __init__(self, *, config: CoreConfig | None = None, store: Any = None) -> None:
        self.config = config or CoreConfig()
        self.store = store
        self.frontend: AcpFrontend | None = None
        self.manager: SessionManager | None = None
        self.inflight: set[asyncio.Task[Any]] = set()  # request handlers still running
        self.prompts = PromptRequests()  # for $/cancel_request
        self.commands = Commands()  # the slash commands (skills) each client was told of
        self.outgoing = OutgoingRequests()  # $/cancel_request of its own requests
        self.answering: dict[str, asyncio.Task[Any]] = {}  # session -> its prompt's request task
        self.stopping = False  # shutting down: a prompt waiting behind a cancel does not run
        self.initialized = False
        self.handshakes = 0  # initialize requests handled, answered with a result or an error

    def on_connect(self, conn: Any) -> None:
        self.frontend = AcpFrontend(conn, self.outgoing)
        self.manager = SessionManager(self.frontend, config=self.config, store=self.store)
        self.frontend.landed_late = self._landed_late

    def _landed_late(self, session_id: str, path: str) -> None:
        """An edit the client wrote after Kiln stopped waiting for it: the session counts the
        file as modified and the model hears it landed with its next request (both stored at
        once); a turn running now shows it as a thought, as it shows Kiln's status notes."""
        live = self.core.live.get(session_id)
        if live is None or self.frontend is None:  # the session was closed meanwhile
            return
        live.session.landed_late(path, late_edit_note(path))
        if self.core.is_busy(session_id):
            self.frontend.send_later(session_id, thought_chunk(late_edit_status(path)))

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
        try:
            return self._initialize(client_capabilities, client_info, protocol_version, kwargs)
        finally:
            self.handshakes += 1

    def _initialize(
        self, client_capabilities: Any, client_info: Any, protocol_version: int, kwargs: Any
    ) -> InitializeResponse:
        assert self.frontend is not None
        if self.initialized:  # capabilities are negotiated once per connection
            raise RequestError(
                INVALID_REQUEST,
                "initialize was already sent on this connection",
                {"hint": "start a new `kiln acp` process to negotiate again"},
            )
        if (options := kiln_options(kwargs)) is not None:  # _meta: {"kiln": {...options}}
            self.core.config = CoreConfig.from_options(options, self.core.config)
        self.initialized = True  # only an initialize that is answered with a result counts
        self.frontend.set_capabilities(client_capabilities)
        name = getattr(client_info, "name", "") or "an ACP client"
        log.info("initialize from %s (protocol %s)", name, protocol_version)
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,  # the only one spoken: the latest supported
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
                mcp_capabilities=McpCapabilities(http=MCP_HTTP, sse=MCP_SSE),
            ),
            agent_info=Implementation(name="kiln", title="Kiln", version=__version__),
            auth_methods=[],
        )

    @rpc_errors
    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise InvalidParams(  # initialize offers none: a model provider is set in the environment
            f"unknown auth method {method_id!r}: Kiln offers no authentication methods",
            hint="Kiln needs no login; configure a model provider in its environment "
            "(ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL, AZURE_OPENAI_ENDPOINT with "
            "AZURE_OPENAI_API_KEY, or the embedded local model; docs/acp.md)",
        )

    # -- sessions -----------------------------------------------------------------------------

    @rpc_errors
    async def new_session(
        self, cwd: str, mcp_servers: Any = None, additional_directories: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        _check_absolute(cwd)
        servers = parse_mcp_servers(_sent_servers(mcp_servers, kwargs), cwd)
        session = await self.core.new_session(cwd, kiln_options(kwargs), servers)
        self._track(session, cwd)
        log.info("session %s in %s", session.id, session.root)
        self._offer_commands(session)
        return NewSessionResponse(session_id=session.id, modes=mode_state(session))

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
        servers = parse_mcp_servers(_sent_servers(mcp_servers, kwargs), cwd)
        try:  # the cwd a client names is refused as for session/new, even if the stored root is fine
            check_root(usable_folder(cwd), kiln_home())
        except UsageError as exc:
            raise CoreError(str(exc), hint=exc.hint, code=NOT_ALLOWED) from None
        await self._after_cancelled(session_id)
        if self.core.is_busy(session_id):
            raise TurnInProgress("the session is running a turn", hint="cancel it or wait")
        session = await self.core.load_session(session_id, mcp_servers=servers, cwd=Path(cwd))
        self._track(session, cwd)
        assert self.frontend is not None
        for update in replayed(self.core.history(session.id)):
            await self.frontend.send_now(session.id, update)
        self._offer_commands(session, again=True)
        return LoadSessionResponse(modes=mode_state(session))

    @rpc_errors
    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        if cwd is not None:
            _check_absolute(cwd)
        # a page of every stored session when cwd is None; then the cursor of the next
        rows, last = self.core.session_page(cwd, after(cursor), PAGE_SIZE)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=r["sessionId"],
                    cwd=as_client_names(cwd, r["cwd"]) if cwd is not None else r["cwd"],
                    title=r["title"] or None,
                    updated_at=r["updatedAt"],
                    field_meta={"kiln": {"mode": r["mode"]}},  # the persisted permission mode
                )
                for r in rows
            ],
            next_cursor=cursor_for(last),
        )

    @rpc_errors
    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        session = self.core.get(session_id)
        modes = available(session)
        if mode_id not in modes:
            raise InvalidParams(f"unknown mode {mode_id!r}", hint=f"use one of: {', '.join(modes)}")
        session.set_mode(mode_id)
        return SetSessionModeResponse()

    def _offer_commands(self, session: Session, *, again: bool = False) -> None:
        """Tell the client the session's slash commands (after the answer being prepared)."""
        assert self.frontend is not None
        if (update := self.commands.update(session, again=again)) is not None:
            self.frontend.send_later(session.id, update)

    def _track(self, session: Session, cwd: str) -> None:
        assert self.frontend is not None
        self.frontend.roots[session.id] = session.root
        self.frontend.paths.opened(session.id, cwd)

    # -- turns --------------------------------------------------------------------------------

    @rpc_errors
    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        if await self._after_cancelled(session_id) and self.stopping:
            return PromptResponse(stop_reason="cancelled")
        if self.core.is_busy(session_id):  # before it is noted: a cancel of it must not stop
            raise TurnInProgress(
                "a turn is already running in this session", hint="cancel it or wait"
            )
        request = self.prompts.started(kwargs.get(REQUEST_ID_KEY), session_id)  # set by the guard
        task = asyncio.current_task()
        if task is not None:
            self.answering[session_id] = task
        try:
            return await self._prompt(session_id, prompt)
        finally:
            self.prompts.ended(request)
            if self.answering.get(session_id) is task:
                del self.answering[session_id]

    async def _after_cancelled(self, session_id: str) -> bool:
        """A request sent right behind ``session/cancel`` waits until the cancelled prompt has
        answered (its request task has then queued the answer ahead of anything sent after
        it); True if it waited. A turn that runs uncancelled is left to the caller to refuse."""
        running = self.answering.get(session_id)
        if running is None or (
            self.core.is_busy(session_id) and not self.core.is_cancelling(session_id)
        ):
            return False
        await asyncio.wait([running])
        return True

    async def _prompt(self, session_id: str, prompt: list[Any]) -> PromptResponse:
        blocks = [
            b.model_dump(mode="json", by_alias=True, exclude_none=True)
            if hasattr(b, "model_dump")
            else b
            for b in prompt
        ]
        session = self.core.get(session_id)
        try:
            if (command := builtin(blocks)) is not None:  # `/compact`…: no model, no transcript
                reason = await self.core.run_command(
                    session_id, lambda: self._run_builtin(session_id, *command)
                )
            else:  # `/skill …` loads that skill first (``commands``)
                reason = await self.core.prompt(
                    session_id,
                    blocks,
                    prepare=lambda b: self._embed_links(session_id, expand(session, b)),
                )
        finally:
            if self.frontend is not None:
                if not self.core.is_busy(session_id):  # skills installed since: offered now
                    self._offer_commands(session)
                await self.frontend.flush(session_id)  # all streamed text before the answer
                if not self.core.is_busy(session_id):
                    self.frontend.release(session_id)
        return PromptResponse(stop_reason=acp_stop_reason(reason))  # type: ignore[arg-type]

    async def _run_builtin(self, session_id: str, name: str, given: str) -> None:
        text = await builtins.run(self.core, session_id, name, given)
        assert self.frontend is not None
        await self.frontend.send_update(session_id, message_chunk(text))

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
                path = resolved(path) if path is not None else None  # a loop: the core refuses it
                if path is not None and (path == root or root in path.parents):
                    span = link_range(str(block["uri"]))  # a bad range: refused before a read
                    text = await self.frontend.client_text(session_id, path)
                    if text is not None:  # the whole file: a linked selection keeps its lines
                        block = {
                            "type": "resource",
                            "resource": {"uri": block["uri"], "text": text},
                            **({"range": span} if span else {}),
                        }
            out.append(block)
        return out

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """A notification: nothing to answer, so an unknown session is only logged."""
        try:
            self.core.cancel(session_id)
        except CoreError as exc:
            log.info("session/cancel ignored: %s", exc)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """``$/cancel_request`` (renamed by the stdio guard): a running prompt's turn is cancelled
        as by ``session/cancel``; any other request is short and left to finish."""
        if method != EXTENSION_NAME:
            log.info("ignored notification _%s", method)
            return
        session_id = self.prompts.session_of(params)
        if session_id is not None:
            await self.cancel(session_id)

    async def drain(self, timeout: float) -> None:
        """Wait (bounded) for running requests to finish and send their responses."""
        pending = [t for t in self.inflight if t is not asyncio.current_task()]
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    async def shutdown(self, grace: float = GRACE_SECONDS) -> None:
        """The client hung up: let quick requests finish, then cancel turns so each prompt
        answers "cancelled" and every transcript ends consistent."""
        self.stopping = True
        await self.drain(grace)
        if self.manager is not None:
            await self.manager.shutdown()
        await self.drain(DRAIN_SECONDS)


def _sent_servers(parsed: Any, kwargs: dict[str, Any]) -> Any:
    """``mcpServers`` as the client sent them (the stdio guard keeps them: the SDK drops entries
    it cannot parse); the SDK's parsed list when the guard was not in the way."""
    if RAW_MCP_KEY in kwargs:
        return kwargs[RAW_MCP_KEY]
    return [
        s.model_dump(mode="json", by_alias=True, exclude_none=True)
        if hasattr(s, "model_dump")
        else s
        for s in parsed or []
    ]


def _check_absolute(cwd: Any) -> None:
    if isinstance(cwd, str) and (error := url_cwd(cwd, file_ok=False)) is not None:
        raise InvalidParams(error, hint="ACP requires absolute paths")
    if not isinstance(cwd, str) or not Path(cwd).is_absolute():
        raise InvalidParams(
            f"cwd must be an absolute path, got {cwd!r}", hint="ACP requires absolute paths"
        )
