"""A session: one conversation in one workspace, persisted, resumable, hosted by any front-end.

``Session`` is the coordinator. It builds the parts and hands each only what it uses:
``Transcript`` (the messages), ``TurnState`` (counters, limits, spend), ``ToolRunner`` (tools,
permissions, edit proposals, redaction), ``ContextAssembler`` (prefix + tail, extensions) and
``SessionServices`` (what tools may ask). It runs one turn at a time, a ``SessionTurn``
(``agent.session_turn``) driven by ``agent.loop.run_turn``, and owns the permission mode
(``set_mode``, persisted in the store).
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

from agent import declared_tools, loop
from agent.compaction import CompactionConfig, Compactor
from agent.config import AgentConfig
from agent.context import NOTES_KEPT, ContextAssembler, cache_key, environment_block
from agent.env_secrets import ci_secrets
from agent.errors import KilnError
from agent.events import AgentEvent, ToolCallFinished, ToolCallRunning, ToolCallStarted
from agent.hosts import DiskHost
from agent.injection import TaintTracker
from agent.memory import Memory
from agent.memory_watch import MemoryWatch
from agent.overflow import model_id, restore_window
from agent.permission_rules import load_rules
from agent.permissions import Permissions
from agent.protocols import Extension, Host, Model
from agent.providers import resumed_model, select_model
from agent.sandbox.attach import attach as attach_sandbox
from agent.services import SessionServices
from agent.session_claim import turn_claim
from agent.session_store import SessionStore, kiln_home
from agent.session_turn import MODE_TOLD, SessionTurn
from agent.status import StatusBar, status_mode
from agent.subagent import run_subagent
from agent.tool_runner import ToolRunner
from agent.tools import READ_ONLY, builtin_tools
from agent.tools.skill_tools import SkillsContext
from agent.transcript import Transcript, stopped_text
from agent.turn import TurnState
from agent.types import Block, Request, StopReason
from agent.workspace import Workspace, check_root

__all__ = ["AgentConfig", "DiskHost", "Session"]


class Session:
    def __init__(
        self,
        *,
        session_id: str,
        root: Path,
        model: Model,
        host: Host,
        config: AgentConfig,
        store: SessionStore,
        messages: list[Any] | None = None,
        epoch: int = 0,
        state: dict[str, Any] | None = None,
        index: Any = None,
    ) -> None:
        self.id = session_id
        self.root = Path(root).resolve()
        self.model = model
        self.host = host
        self.config = config
        self._open_calls: dict[str, str] = {}  # tool calls started and not yet finished
        self._running_calls: set[str] = set()  # of those, the ones that began to run
        self.store = store
        self.state: dict[str, Any] = state or {}
        self.transcript = Transcript(store, session_id, messages or [], epoch)
        self.turn = TurnState(self.state, config)
        self.status = StatusBar(cwd=str(self.root), mode=status_mode(config.extra))
        self.permissions = Permissions(
            config.mode, load_rules(self.root, kiln_home()), root=self.root
        )
        self.memory = Memory(self.root, kiln_home(), denied=self.permissions.read_denied)
        workspace = Workspace(self.root, read_roots=[store.folder(session_id)])
        skills = (
            None
            if config.subagent
            else SkillsContext(
                self.root,
                permissions=self.permissions,
                client_servers=config.mcp_servers,
                cwd=config.extra.get("user_cwd") or None,
            )
        )
        self.skills = skills  # the skills catalog and deferred tools (None in a sub-agent)
        tools = builtin_tools(skills.tools() if skills else [])
        if config.subagent:
            tools = [t for t in tools if t.spec.name in READ_ONLY]
        self.runner = ToolRunner(
            tools,
            permissions=self.permissions,
            host=host,
            emit=self.emit,
            turn=self.turn,
            status=self.status,
            workspace=workspace,
            output_folder=store.folder(session_id),
            output_budget=config.output_budget,
            window_tokens=lambda: int(getattr(self.model, "context_window", 0) or 0),
            # the ci mode is CI's policy, however it was chosen (`kiln run --mode ci`, an editor)
            secrets=ci_secrets(self.root) if config.redact_env or config.mode == "ci" else [],
        )
        declared_tools.restore(self.runner, self.state, skills.tool_catalog.get if skills else None)
        self.compactor = Compactor(CompactionConfig.from_extra(config.extra))
        extensions: list[Extension] = [
            self.compactor,
            TaintTracker(),  # external text in context taints every turn
            MemoryWatch(self.memory),  # a memory file edited since it was sent, again
            *([skills] if skills else []),
        ]
        self.context = ContextAssembler(self.runner, self.status, extensions)
        self.services = SessionServices(
            session_id=session_id,
            workspace=workspace,
            host=host,
            runner=self.runner,
            context=self.context,
            memory=self.memory,
            turn=self.turn,
            status=self.status,
            store=store,
            state=self.state,
            emit=self.emit,
            spawn=functools.partial(run_subagent, self),
            index=index,
        )
        self.sandbox = attach_sandbox(self, kiln_home())  # commands run confined
        self.memory.host_run = self.services.workspace.host_run  # `remember` never writes there
        if skills is not None:
            skills.mcp.launch = self.sandbox.launcher  # MCP servers too, whatever starts them
        self._task: asyncio.Task[StopReason] | None = None
        self.cancel_reason: StopReason = "cancelled"

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        root: Path | str,
        *,
        host: Host,
        config: AgentConfig | None = None,
        model: Model | None = None,
        store: SessionStore | None = None,
        index: Any = None,
    ) -> Session:
        config = config or AgentConfig()
        model = model or select_model({"provider": config.provider, "model": config.model})
        root = Path(root).resolve()
        if not root.is_dir():
            raise KilnError(
                f"workspace {root} is not a directory", hint="pass an existing folder with --root"
            )
        check_root(root, kiln_home())  # before the store: a KILN_HOME refused here is not made
        store = store or SessionStore()
        sid = store.create(
            root,
            provider=model.name,
            model=model_id(model),
            mode=config.mode,
        )
        session = cls(
            session_id=sid,
            root=root,
            model=model,
            host=host,
            config=config,
            store=store,
            index=index,
        )
        session.context.add(
            environment_block(session.root, config.mode, config.extra.get("user_cwd", "")),
            *session.memory.initial_blocks(),
        )
        session.state[MODE_TOLD] = config.mode
        return session

    @classmethod
    def load(
        cls,
        session_id: str,
        *,
        host: Host,
        config: AgentConfig | None = None,
        model: Model | None = None,
        store: SessionStore | None = None,
        index: Any = None,
    ) -> Session:
        """Resume a stored session in the permission mode it was left in (unless ``config``
        names another, which is then recorded)."""
        store = store or SessionStore()
        info = store.get(session_id)
        check_root(Path(info["root"]), kiln_home(), resumed=session_id)
        config = config or AgentConfig(mode=info["mode"])
        # Step and turn numbers key the stored requests and usage: count on from the last ones
        # stored, or a turn killed before its end had its rows written over by the next one.
        step, turn = store.counters(session_id)
        state = info["state"]
        state.update(steps=max(step, int(state.get("steps", 0))),
                     turns=max(turn, int(state.get("turns", 0))))  # fmt: skip
        if model is None:
            model = resumed_model(config.provider, config.model, info["provider"], info["model"])
        session = cls(
            session_id=session_id,
            root=Path(info["root"]),
            model=model,
            host=host,
            config=config,
            store=store,
            messages=store.messages(session_id, info["epoch"]),
            epoch=info["epoch"],
            state=info["state"],
            index=index,
        )
        if config.mode != info["mode"]:
            store.update(session_id, mode=config.mode)
        if (model.name, model_id(model)) != (info["provider"], info["model"]):
            store.update(session_id, provider=model.name, model=model_id(model))  # --model
        restore_window(model, session.state)
        session.turn.cost_before = sum(u["cost_usd"] for u in store.usage(session_id))
        session.memory.restore(session.state)  # memory the transcript already holds
        return session

    # -- the permission mode --------------------------------------------------------------------

    @property
    def mode(self) -> str:
        return self.permissions.mode

    def set_mode(self, mode: str) -> None:
        """The one writer of the permission mode: checked, applied and persisted."""
        Permissions(mode)  # raises ConfigError for an unknown mode
        self.permissions.mode = mode
        self.store.update(self.id, mode=mode)

    def set_model(self, model: Model) -> Model:
        """The one writer of the session's model: used from the next request and stored, so a
        resume goes on with it. Returns the model it replaces, for the caller to close."""
        replaced, self.model = self.model, model
        restore_window(model, self.state)
        self.store.update(self.id, provider=model.name, model=model_id(model))
        return replaced

    def landed_late(self, path: str, note: str) -> None:
        """An edit the host had stopped waiting for was applied after all: it counts among the
        files modified, and the model reads ``note`` with its next request, from this process
        or one that resumes the session later (both are stored at once)."""
        self.turn.modified(path)
        self.state["files_modified"] = list(self.turn.files_modified)
        self.state.setdefault(NOTES_KEPT, []).append(note)
        self.store.update(self.id, state=self.state)

    # -- a turn -------------------------------------------------------------------------------

    async def prompt(self, content: list[Block] | str) -> StopReason:
        """Run one user turn to its end; safe to cancel with ``cancel()``."""
        if self.busy:
            raise KilnError(
                "a turn is already in progress in this session", hint="cancel it or wait"
            )
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        with turn_claim(self.store, self.transcript):  # one writer per session
            self.cancel_reason = "cancelled"
            task = self._task = asyncio.ensure_future(loop.run_turn(SessionTurn(self), blocks))
            timer = None
            if self.config.max_seconds:
                # The wall-clock limit also interrupts a tool that is still running.
                timer = asyncio.get_running_loop().call_later(
                    self.config.max_seconds, self.cancel, "max_time"
                )
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                task.cancel()
                try:
                    return await task
                except asyncio.CancelledError:
                    # cancelled as the turn ended, with no await left to deliver it to (a
                    # reader that left during the last answer): asyncio marks the finished,
                    # closed turn cancelled instead of returning its reason
                    return self.cancel_reason
            finally:
                if timer is not None:
                    timer.cancel()

    def cancel(self, reason: StopReason = "cancelled") -> None:
        if self._task is not None and not self._task.done():
            self.cancel_reason = reason
            self._task.cancel()

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start_client_mcp(self, timeout: float) -> None:
        """Start the MCP servers the host passed (``config.mcp_servers``) now, each bounded by
        ``timeout`` seconds; a failure is a note at the first turn, never an error here."""
        if self.skills is not None:
            await self.skills.mcp.start_client(timeout)

    async def aclose(self) -> None:
        """Release what the session holds open (MCP connections, SDK clients); safe to repeat."""
        await self.context.aclose()
        close = getattr(self.model, "aclose", None)  # optional on Model: SDK-backed ones have it
        if close is not None:
            try:
                await close()
            except Exception:  # noqa: BLE001 - closing must not mask the turn's outcome
                pass

    async def emit(self, event: AgentEvent) -> None:
        event.session_id = self.id
        if isinstance(event, ToolCallStarted):
            self._open_calls[event.id] = event.name
        elif isinstance(event, ToolCallRunning):
            self._running_calls.add(event.id)
        elif isinstance(event, ToolCallFinished):
            self._open_calls.pop(event.id, None)
            self._running_calls.discard(event.id)
        await self.host.emit(event)

    async def close_open_calls(self, reason: StopReason) -> None:
        """A call the limit or a cancel cut short ends for the host too (no spinner left
        running): each tool call started and not finished is reported failed."""
        for call_id, name in list(self._open_calls.items()):
            output = stopped_text(reason, ran=call_id in self._running_calls)
            await self.emit(ToolCallFinished(id=call_id, name=name, status="failed",
                                             output=output, is_error=True))  # fmt: skip

    # -- what extensions and the model call see (agent.protocols.SessionView) ---------------

    def build_request(self) -> Request:
        # a sub-agent's requests share its parent's prefix, so they share its key too
        owner = str(self.state.get("parent") or self.id)
        return self.context.request(
            self.transcript.messages,
            self.config.max_tokens,
            cache_key=cache_key(owner),
            root=str(self.root),
        )

    def announce_tools(self, tools: list[Any]) -> list[Any]:
        """Make deferred tools callable from now on (extensions announce them too)."""
        return self.runner.announce(tools)
