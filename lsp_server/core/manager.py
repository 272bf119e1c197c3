"""The table of live sessions of one server process: create, load, prompt, cancel, close.

Each live session gets a ``CoreHost`` (``lsp_server.core.host``) and a ``LiveSession`` entry
(``lsp_server.core.live_session``: the turn running in it, and how a cancel reaches it); MCP
servers a client passed for a session start when it is opened, bounded by
``CoreConfig.mcp_start_timeout``.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent.env_secrets import env_secrets, redact, redact_all
from agent.errors import KilnError
from agent.events import PlanUpdated
from agent.protocols import EditOutcome, EditProposal
from agent.session import AgentConfig, Session
from agent.session_claim import behind
from agent.session_store import SessionStore
from lsp_server.core import heap, partial
from lsp_server.core.config import CoreConfig, Frontend
from lsp_server.core.errors import (
    NOT_ALLOWED,
    CoreError,
    InvalidParams,
    TurnInProgress,
    UnknownSession,
)
from lsp_server.core.host import CoreHost
from lsp_server.core.live_session import LiveSession, Prepare
from lsp_server.core.prompts import (
    check_fits,
    prompt_to_blocks,
    read_disk,
    rendered_skill,
)
from lsp_server.core.session_folder import same_workspace, session_folder
from lsp_server.core.updates import event_to_update, history_updates

log = logging.getLogger("kiln.core")

_PROVIDER_SDKS = {"anthropic": "anthropic", "openai": "openai", "azure": "openai"}


class SessionManager:
    """The table of live sessions of one server process; every method runs on its event loop."""

    def __init__(
        self,
        frontend: Frontend,
        *,
        root: Path | None = None,
        config: CoreConfig | None = None,
        store: SessionStore | None = None,
        index: Any = None,
    ) -> None:
        self.frontend = frontend
        self.root = Path(root).resolve() if root else None
        self.config = config or CoreConfig()
        self._store = store
        self.index = index  # a shared indexer.Index for sessions in ``root``, if any
        self.live: dict[str, LiveSession] = {}
        self.pending_edits: dict[str, tuple[str, EditProposal]] = {}
        self._loading: dict[str, asyncio.Future[None]] = {}  # loads under way, by session id

    @property
    def store(self) -> SessionStore:
        if self._store is None:
            self._store = SessionStore()
        return self._store

    def _session_config(self, config: CoreConfig, mcp_servers: list[Any]) -> AgentConfig:
        return AgentConfig(
            mode=config.mode,
            max_steps=config.max_steps,
            provider=config.provider,
            model=config.model,
            mcp_servers=mcp_servers,
        )

    async def new_session(
        self,
        cwd: str | None = None,
        options: dict[str, Any] | None = None,
        mcp_servers: list[Any] | None = None,
    ) -> Session:
        """Create a session (``options`` as in CoreConfig.from_options override the defaults;
        ``mcp_servers``: ``McpServerConfig``s the client passed for this session only)."""
        config = CoreConfig.from_options(options, self.config)
        root = session_folder(self.root, cwd)
        host = CoreHost(self, config)
        host.root = root
        return await self._open(Session.create, root, host, config, mcp_servers or [])

    async def load_session(
        self,
        session_id: str,
        options: dict[str, Any] | None = None,
        mcp_servers: list[Any] | None = None,
        cwd: Path | None = None,
    ) -> Session:
        """Resume a stored session; a session already live is returned as is (with the MCP
        servers it was opened with), unless another process continued it since: then it is
        loaded again from the store. ``cwd``: the folder the client works in; a session of an
        unrelated folder is refused (its tools would work on files the client has not open)."""
        if not isinstance(session_id, str) or not session_id:
            raise InvalidParams("sessionId must be a non-empty string")
        # One load of an id at a time: a second one arriving meanwhile gets the session the
        # first made live, rather than a copy that would replace it.
        while (loading := self._loading.get(session_id)) is not None:
            await asyncio.wait([loading])
        self._loading[session_id] = done = asyncio.get_running_loop().create_future()
        try:
            return await self._load(session_id, options, mcp_servers, cwd)
        finally:
            del self._loading[session_id]
            done.set_result(None)

    async def _load(
        self,
        session_id: str,
        options: dict[str, Any] | None,
        mcp_servers: list[Any] | None,
        cwd: Path | None,
    ) -> Session:
        live = self.live.get(session_id)
        if live is not None:
            same_workspace(session_id, live.session.root, cwd)
            if self.is_busy(session_id) or not behind(self.store, live.session.transcript):
                return live.session
            # Another process continued it since (a terminal's `kiln run --resume`): this copy
            # would refuse every prompt, so load what is stored instead.
            await self.close_session(session_id)
        config = CoreConfig.from_options(options, self.config)
        try:
            info = self.store.get(session_id)
        except KilnError:
            raise UnknownSession(  # shared by both front-ends: no method names in the hint
                f"no session {session_id!r}", hint="list the stored sessions to find its id"
            ) from None
        session_folder(self.root, info["root"])
        same_workspace(session_id, Path(info["root"]), cwd)
        config.mode = (options or {}).get("mode") or info["mode"] or config.mode
        host = CoreHost(self, config)
        host.root = Path(info["root"])
        return await self._open(Session.load, session_id, host, config, mcp_servers or [])

    async def _open(
        self,
        opener: Callable[..., Session],
        key: Any,
        host: CoreHost,
        config: CoreConfig,
        mcp_servers: list[Any],
    ) -> Session:
        """Create or load (``opener`` with ``key``) off the event loop, make it live, then start
        the client's MCP servers (live first: a shutdown meanwhile stops them too)."""
        index = self.index if host.root == self.root else None
        session = await asyncio.to_thread(
            opener,
            key,
            host=host,
            config=self._session_config(config, mcp_servers),
            store=self.store,
            index=index,
        )
        await self._warm(session)
        self._adopt(session, host)
        if mcp_servers:
            try:
                await session.start_client_mcp(config.mcp_start_timeout)
            except BaseException:  # the request was cancelled: no server outlives it
                await self.close_session(session.id)
                raise
        return session

    async def _warm(self, session: Session) -> None:
        """Import the provider's SDK in a worker thread now: it would otherwise be imported on
        the first model call, inside the event loop, freezing every request for seconds."""
        model = session.model
        module = _PROVIDER_SDKS.get(
            str(getattr(model, "provider", "") or getattr(model, "name", ""))
        )
        if module and module not in sys.modules:
            try:
                await asyncio.to_thread(importlib.import_module, module)
            except ImportError:  # the provider reports it properly on its first call
                pass

    def _adopt(self, session: Session, host: CoreHost) -> None:
        host.session_id = session.id
        host.context_window = int(getattr(session.model, "context_window", 0) or 0)
        if self.index is not None and host.root == self.root:
            session.state["indexed"] = True  # the front-end keeps the shared index fresh
        self.live[session.id] = LiveSession(session, host)

    def session_page(
        self, cwd: str | None = None, after: tuple[float, str] | None = None, size: int = 50
    ) -> tuple[list[dict[str, Any]], tuple[float, str] | None]:
        """A page of stored sessions, newest first, from the one after ``after`` on; and the
        (updated, id) key of its last one when more follow (None: the listing is complete).
        Titles are redacted as `kiln sessions list` prints them (``agent.env_secrets``)."""
        root = session_folder(self.root, cwd) if cwd is not None else self.root
        rows = self.store.recent(root, limit=size + 1, before=after)
        more, rows = len(rows) > size, rows[:size]
        secrets = env_secrets()
        page = [
            {
                "sessionId": r["id"],
                "cwd": r["root"],
                "title": redact(r["title"] or "", secrets),
                "updatedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(r["updated"])),
                "mode": r["mode"],
                "live": r["id"] in self.live,
                "busy": self.is_busy(r["id"]),
            }
            for r in rows
        ]
        return page, (rows[-1]["updated"], rows[-1]["id"]) if more else None

    def history(self, session_id: str) -> list[dict[str, Any]]:
        """A live session's stored conversation as updates, for a load that replays it (the
        same for ACP and LSP): tool calls keep the kind of the tool that made them. What it
        shows is redacted as `kiln sessions show` prints it, before a title or a result is cut
        (the model goes on with the conversation as stored)."""
        session = self.get(session_id)
        tools = {**session.runner.deferred, **session.runner.tools}
        kinds = {name: tool.kind for name, tool in tools.items()}
        epoch = session.transcript.epoch
        secrets = env_secrets()
        updates = history_updates(
            redact_all(session.transcript.messages, secrets),
            root=session.root,
            tool_kinds=kinds,
            thoughts=redact_all(session.store.thoughts(session.id, epoch), secrets),
            stops=redact_all(session.store.stops(session.id, epoch), secrets),
        )
        todos = redact_all(session.state.get("todos"), secrets)
        plan = (
            event_to_update(PlanUpdated(entries=list(todos)), root=session.root) if todos else None
        )
        return [*updates, plan] if plan else updates  # the plan as it stands, for its view

    def get(self, session_id: Any) -> Session:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidParams("sessionId must be a non-empty string")
        live = self.live.get(session_id)
        if live is None:
            raise UnknownSession(
                f"no live session {session_id!r}", hint="create a session or load it first"
            )
        return live.session

    def is_busy(self, session_id: str) -> bool:
        live = self.live.get(session_id)
        return bool(live and live.busy)

    def is_cancelling(self, session_id: str) -> bool:
        """The running turn was cancelled and has not ended yet (nothing it asked may apply)."""
        live = self.live.get(session_id)
        return bool(live and live.cancelling and self.is_busy(session_id))

    async def prompt(self, session_id: str, prompt: Any, prepare: Prepare | None = None) -> str:
        """Run one turn to its end and return the agent's stop reason (never raises on cancel).

        ``prepare`` (optional) rewrites the prompt's blocks first, e.g. to fetch attached files
        from the client; it runs inside the turn, so the session is busy from the moment the
        prompt is accepted: a second prompt meanwhile is refused and a cancel stops this one.
        """
        session = self.get(session_id)
        live = self.live[session_id]
        if self.is_busy(session_id):
            raise TurnInProgress(
                "a turn is already running in this session", hint="cancel it or wait"
            )
        if (
            session.services.index is None
            and self.index is not None
            and live.host.root == self.root
        ):
            # The front-end's index opened after this session was made: share it rather than
            # letting the session build its own on the event loop.
            session.services.use_index(self.index)
        reason = await self._as_turn(session_id, self._turn(live, prompt, prepare))
        await live.host.close_open_calls(reason)
        heap.after_turn()
        return reason

    async def run_command(self, session_id: str, work: Callable[[], Awaitable[None]]) -> str:
        """Run a built-in command (``/compact``…) in place of a turn: the session is busy
        meanwhile (a prompt is refused, a load waits) and a cancel stops it. Its stop reason."""
        self.get(session_id)
        if self.is_busy(session_id):
            raise TurnInProgress(
                "a turn is already running in this session", hint="cancel it or wait"
            )
        return await self._as_turn(session_id, self.live[session_id].command(work))

    async def _as_turn(self, session_id: str, turn: Awaitable[str]) -> str:
        live = self.live[session_id]
        live.cancel_before_start = live.cancelling = False
        live.turn = asyncio.ensure_future(turn)
        try:
            return await asyncio.shield(live.turn)
        except asyncio.CancelledError:  # the request itself was cancelled: a hard cancel
            self.cancel(session_id)
            return await live.turn

    async def _turn(self, live: LiveSession, prompt: Any, prepare: Prepare | None) -> str:
        # A cancel handled between scheduling this turn and its start (it came right behind
        # the prompt) found no task in the session to stop: it is honoured here instead.
        if live.cancel_before_start:
            return "cancelled"
        if prepare is not None and isinstance(prompt, list):
            prompt = await live.prepared(prompt, prepare)  # a cancel stops it
            if live.cancel_before_start:
                return "cancelled"
        read = self.frontend.read_buffer
        blocks = prompt_to_blocks(
            prompt,
            root=live.session.root,
            read_text=lambda p: read(p) or read_disk(p, live.session.root),
            read_uri=getattr(self.frontend, "read_uri", None),
            skill_text=lambda name: rendered_skill(live.session, name),
        )
        check_fits(blocks, int(getattr(live.session.model, "context_window", 0) or 0))
        return await live.session.prompt(blocks)

    def cancel(self, session_id: str) -> bool:
        """Cancel the running turn; its prompt call then returns "cancelled". False if idle."""
        self.get(session_id)  # a live session's id, or InvalidParams / UnknownSession
        return self.live[session_id].cancel()

    async def resolve_edit(
        self, proposal_id: Any, decision: Any, new_text: str | None = None
    ) -> EditOutcome:
        """Apply or drop a deferred proposal (``decision``: "accept" | "reject").

        ``new_text`` (accept only) is the file as the user kept it, some hunks left out: it is
        applied instead, and the model hears that only part of its edit landed."""
        if decision not in ("accept", "reject"):
            raise InvalidParams("decision must be 'accept' or 'reject'")
        if not isinstance(proposal_id, str) or proposal_id not in self.pending_edits:
            raise CoreError(
                f"no pending edit {proposal_id!r}", code=NOT_ALLOWED, hint="see kiln/edit/list"
            )
        session_id, proposal = self.pending_edits.pop(proposal_id)
        if decision == "reject":
            return "rejected"
        kept = partial.kept_text({"_meta": {"newText": new_text}}, proposal)
        if kept is not None:
            proposal = partial.with_kept_text(proposal, kept)
        outcome = await self.frontend.apply_edit(session_id, proposal)
        live = self.live.get(session_id)
        if outcome == "applied" and live:
            live.session.turn.modified(proposal.path)
            if kept is not None:
                live.session.context.add(partial.note_for_model(proposal.path))
        return outcome

    async def close_session(self, session_id: str) -> bool:
        """Forget a live session (its turn is cancelled first); it stays stored and loadable.

        Pending deferred edits of the session are dropped. False if it was not live."""
        live = self.live.get(session_id)
        if live is None:
            return False
        if live.turn is not None and not live.turn.done():
            self.cancel(session_id)  # also a turn scheduled and not yet started
            await asyncio.gather(live.turn, return_exceptions=True)
        for pid in [p for p, (sid, _) in self.pending_edits.items() if sid == session_id]:
            del self.pending_edits[pid]
        del self.live[session_id]
        await live.session.aclose()
        return True

    async def shutdown(self) -> None:
        """Cancel every running turn and wait, so transcripts end consistent and state is saved."""
        turns = [live.turn for live in self.live.values() if live.turn and not live.turn.done()]
        for session_id in list(self.live):
            self.cancel(session_id)
        if turns:
            await asyncio.gather(*turns, return_exceptions=True)
        for live in list(self.live.values()):
            await live.session.aclose()
