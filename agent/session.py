"""A session: one conversation in one workspace, persisted, resumable, hosted by any front-end.

The request is a frozen prefix (system prompt + built-in tool specs, byte-identical for the
session) followed by an append-only trajectory. Dynamic context (environment, memory, skills,
status) is appended as tagged text blocks to the next user message at the moment it is created,
so nothing already sent is ever rewritten (compaction excepted, and recorded).
"""

from __future__ import annotations

import asyncio
import os
import platform
import time
from pathlib import Path
from typing import Any

from agent import loop, services, tool_calls, wire_log
from agent.compaction import CompactionConfig, Compactor
from agent.config import AgentConfig
from agent.errors import KilnError, ProviderError
from agent.hosts import DiskHost
from agent.injection import TaintTracker
from agent.memory import Memory
from agent.permissions import Permissions, load_rules
from agent.prompts import SYSTEM_PROMPT
from agent.protocols import (
    EditProposal,
    Host,
    Model,
    Tool,
)
from agent.sessions import SessionStore, kiln_home
from agent.status import StatusBar, status_mode
from agent.tools import READ_ONLY, builtin_tools
from agent.types import (
    Block,
    Event,
    Message,
    ModelReply,
    Request,
    StopReason,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from agent.workspace import Workspace

__all__ = ["AgentConfig", "DiskHost", "Session"]

SECRET_NAME_HINTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


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
        messages: list[Message] | None = None,
        epoch: int = 0,
        state: dict[str, Any] | None = None,
        index: Any = None,
    ) -> None:
        self.id = session_id
        self.root = Path(root).resolve()
        self.model = model
        self.host = host
        self.config = config
        self.store = store
        self.messages: list[Message] = messages or []
        self.epoch = epoch
        self.state: dict[str, Any] = state or {}
        self.workspace = Workspace(self.root, read_roots=[store.folder(session_id)])
        self.permissions = Permissions(config.mode, load_rules(self.root, kiln_home()))
        self.status = StatusBar(cwd=str(self.root), mode=status_mode(config.extra))
        self.memory = Memory(self.root, kiln_home())
        self.usage = Usage()
        self.cost_usd = 0.0
        self.step_count = int(self.state.get("steps", 0))
        self.turn = int(self.state.get("turns", 0))
        self.turn_steps = 0
        self.turn_started = time.monotonic()
        self.refusals: list[dict[str, Any]] = []
        self.files_modified: list[str] = list(self.state.get("files_modified", []))
        self.memory_proposals: list[dict[str, Any]] = []
        self.pending_tail: list[str] = []
        self.tainted = False  # external content entered the context this turn
        self.command_env: dict[str, str] = {}
        self._index = index
        self._task: asyncio.Task[StopReason] | None = None
        self.cancel_reason: StopReason = "cancelled"
        self.tools: dict[str, Tool] = {t.spec.name: t for t in self._make_tools()}
        self.deferred: dict[str, Any] = {}
        self._edit_calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self.secrets = self._collect_secrets() if config.redact_env else []
        self.extensions: list[Any] = []  # context sources (skills, compaction…) registered by name
        self.extensions.append(Compactor(CompactionConfig.from_extra(config.extra)))
        self.extensions.append(TaintTracker())  # external text in context taints every turn
        skills_context = getattr(self, "skills_context", None)  # set by skill_tools.make_tools
        if skills_context is not None:
            self.extensions.append(skills_context)

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
        from agent.providers import select_model

        config = config or AgentConfig()
        model = model or select_model({"provider": config.provider, "model": config.model})
        store = store or SessionStore()
        root = Path(root).resolve()
        if not root.is_dir():
            raise KilnError(
                f"workspace {root} is not a directory", hint="pass an existing folder with --root"
            )
        sid = store.create(
            root,
            provider=model.name,
            model=str(getattr(model, "model", "") or model.name),
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
        session.pending_tail += [session._environment_block(), *session.memory.initial_blocks()]
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
        from agent.providers import select_model

        store = store or SessionStore()
        info = store.get(session_id)
        config = config or AgentConfig(mode=info["mode"])
        model = model or select_model(
            {"provider": config.provider or info["provider"] or None, "model": config.model}
        )
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
        session.memory.loaded_dirs.add(session.root)
        return session

    def _make_tools(self) -> list[Tool]:
        tools = builtin_tools(self._extension_tools())
        if self.config.subagent:
            tools = [t for t in tools if t.spec.name in READ_ONLY]
        return tools

    def _extension_tools(self) -> list[Tool]:
        try:
            from agent.tools.skill_tools import make_tools
        except ImportError:
            return []
        return list(make_tools(self))

    def _environment_block(self) -> str:
        return (
            "<environment>\n"
            f"workspace_root: {self.root}\nos: {platform.system()} {platform.release()} {platform.machine()}\n"
            f"python: {platform.python_version()}\npermission_mode: {self.config.mode}\n"
            f"date: {time.strftime('%Y-%m-%d')}\n{self._user_cwd()}</environment>"
        )

    def _user_cwd(self) -> str:
        cwd = self.config.extra.get("user_cwd")
        if not cwd:
            return ""
        return f"user_cwd: {cwd} (where the user ran kiln, relative to workspace_root)\n"

    def _collect_secrets(self) -> list[tuple[str, str]]:
        return sorted(
            (
                (k, v)
                for k, v in os.environ.items()
                if len(v) >= 8 and any(h in k.upper() for h in SECRET_NAME_HINTS)
            ),
            key=lambda kv: -len(kv[1]),
        )

    # -- the request ------------------------------------------------------------------------

    def prefix(self) -> dict[str, Any]:
        return {"system": SYSTEM_PROMPT, "tools": [t.spec.to_dict() for t in self.tools.values()]}

    def build_request(self) -> Request:
        return Request(
            system=SYSTEM_PROMPT,
            tools=[t.spec for t in self.tools.values()],
            messages=self.messages,
            max_tokens=self.config.max_tokens,
            deferred_tools=[t.spec for t in self.deferred.values()],
        )

    def _tail_blocks(self) -> list[Block]:
        for ext in self.extensions:
            block = ext.tail_block(self) if hasattr(ext, "tail_block") else None
            if block:
                self.pending_tail.append(block)
        # No status before the first request: the first block sent is then the complete one.
        status = self.status.changed_block() if self.step_count else None
        blocks = [*self.pending_tail, *([status] if status else [])]
        self.pending_tail = []
        return [{"type": "text", "text": b} for b in blocks]

    def append(self, message: Message) -> None:
        self.store.append_message(self.id, self.epoch, len(self.messages), message)
        self.messages.append(message)

    def append_tool_results(self, results: list[Block]) -> None:
        self.append({"role": "user", "content": [*results, *self._tail_blocks()]})

    # -- a turn -----------------------------------------------------------------------------

    async def prompt(self, content: list[Block] | str) -> StopReason:
        """Run one user turn to its end; safe to cancel with ``cancel()``."""
        if self._task is not None and not self._task.done():
            raise KilnError(
                "a turn is already in progress in this session", hint="cancel it or wait"
            )
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        self.cancel_reason = "cancelled"
        self._task = asyncio.ensure_future(loop.run_turn(self, blocks))
        timer = None
        if self.config.max_seconds:
            # The wall-clock limit also interrupts a tool that is still running.
            timer = asyncio.get_running_loop().call_later(
                self.config.max_seconds, self.cancel, "max_time"
            )
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            self._task.cancel()
            return await self._task
        finally:
            if timer is not None:
                timer.cancel()

    async def aclose(self) -> None:
        """Release what the session holds open (MCP connections, SDK clients); safe to repeat."""
        for ext in self.extensions:
            if hasattr(ext, "aclose"):
                try:
                    await ext.aclose()
                except Exception:  # noqa: BLE001 - closing must not mask the turn's outcome
                    pass
        if hasattr(self.model, "aclose"):
            try:
                await self.model.aclose()
            except Exception:  # noqa: BLE001
                pass

    def cancel(self, reason: StopReason = "cancelled") -> None:
        if self._task is not None and not self._task.done():
            self.cancel_reason = reason
            self._task.cancel()

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    def begin_turn(self, prompt: list[Block]) -> None:
        self.turn += 1
        self.turn_steps = 0
        self.turn_started = time.monotonic()
        self.tainted = False
        if not self.state.get("title"):
            first = next((b["text"] for b in prompt if b.get("type") == "text"), "")
            self.state["title"] = first[:80]
            self.store.update(self.id, title=self.state["title"])
        self.append({"role": "user", "content": [*self._tail_blocks(), *prompt]})

    def check_limits(self) -> None:
        if self.turn_steps >= self.config.max_steps:
            raise loop.TurnEnded("max_steps", f"step limit reached ({self.config.max_steps})")
        if (
            self.config.max_seconds
            and time.monotonic() - self.turn_started > self.config.max_seconds
        ):
            raise loop.TurnEnded("max_time", f"time limit reached ({self.config.max_seconds:g}s)")
        if self.config.max_cost_usd is not None and self.cost_usd >= self.config.max_cost_usd:
            raise loop.TurnEnded(
                "max_cost",
                f"cost limit reached (${self.cost_usd:.4f} of ${self.config.max_cost_usd:g})",
            )

    async def step(self) -> ModelReply:
        for ext in self.extensions:
            if hasattr(ext, "before_request"):
                await ext.before_request(self)
        request = self.build_request()
        self.step_count += 1
        self.turn_steps += 1
        wire_log.record(self.store.folder(self.id), self.step_count, self.model, request)
        self.store.record_request(
            self.id,
            self.step_count,
            self.turn,
            self.epoch,
            len(self.messages),
            self.prefix(),
            list(self.deferred),
            request.max_tokens,
        )
        reply: ModelReply | None = None
        partial: list[str] = []
        async for item in self.model.stream(request):
            if isinstance(item, TextDelta):
                partial.append(item.text)
                await self.emit("text_delta", text=item.text)
            elif isinstance(item, ToolCallDelta):
                pass
            elif isinstance(item, ModelReply):
                reply = item
        if reply is None:
            raise ProviderError("the provider ended the stream without a reply")
        self.append(reply.message)
        await self._account(reply)
        return reply

    async def _account(self, reply: ModelReply) -> None:
        from agent.providers.pricing import cost_usd

        cost = cost_usd(reply.model or self.model.name, reply.usage)
        self.usage = self.usage + reply.usage
        self.cost_usd += cost
        self.store.record_usage(
            self.id, self.step_count, self.turn, reply.model or self.model.name, reply.usage, cost
        )
        window = getattr(self.model, "context_window", 0) or 0
        if window:
            self.status.context_used = (
                reply.usage.total_input + reply.usage.output_tokens
            ) / window
        await self.emit(
            "usage", **reply.usage.to_dict(), cost_usd=round(self.cost_usd, 6), step=self.step_count
        )

    async def end_turn(self, reason: StopReason) -> None:
        self._close_dangling_tool_uses(reason)
        self.state.update(
            steps=self.step_count,
            turns=self.turn,
            files_modified=self.files_modified,
            deferred=list(self.deferred),
        )
        self.store.update(self.id, state=self.state, status="idle")
        await self.emit("done", stop_reason=reason)

    def _close_dangling_tool_uses(self, reason: str) -> None:
        """A cancelled turn may leave tool_use blocks unanswered; answer them so the session stays valid."""
        if not self.messages or self.messages[-1].get("role") != "assistant":
            return
        pending = [b for b in self.messages[-1]["content"] if b.get("type") == "tool_use"]
        if pending:
            self.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": b["id"],
                            "content": f"not run: turn ended ({reason})",
                            "is_error": True,
                        }
                        for b in pending
                    ],
                }
            )

    async def note_stop(self, detail: str) -> None:
        await self.emit("status", text=detail)

    async def provider_failed(self, exc: ProviderError) -> None:
        text = getattr(exc, "partial_text", "") or ""
        if text:
            self.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
        await self.emit("error", message=str(exc), hint=getattr(exc, "hint", ""))

    # -- tools ------------------------------------------------------------------------------

    def find_tool(self, name: str) -> Tool | None:
        return self.tools.get(name) or self.deferred.get(name)

    async def run_tool(self, call: Block) -> Block:
        return await tool_calls.run_tool(self, call)

    async def _authorise(
        self, name: str, args: dict[str, Any], call_id: str, proposal: EditProposal | None = None
    ) -> None:
        await tool_calls.authorise(self, name, args, call_id, proposal)

    # -- services the tools call ------------------------------------------------------------

    def read_text(self, path: Path) -> str:
        return services.read_text(self, path)

    def touch(self, path: Path) -> None:
        self.pending_tail += self.memory.blocks_for(path)

    async def propose_edit(self, path: Path, old: str, new: str, *, call_id: str = "") -> str:
        return await services.propose_edit(self, path, old, new, call_id=call_id)

    async def set_todos(self, items: list[dict[str, Any]]) -> None:
        self.status.todos = items
        self.state["todos"] = items
        await self.emit("plan", entries=items)

    async def propose_memory(self, text: str, *, call_id: str = "") -> str:
        return await services.propose_memory(self, text, call_id=call_id)

    async def run_subagent(self, description: str) -> str:
        return await services.run_subagent(self, description)

    def announce_tools(self, tools: list[Any]) -> list[Any]:
        """Make deferred tools callable from now on; returns the ones that are new."""
        new = [t for t in tools if t.name not in self.deferred and t.name not in self.tools]
        for tool in new:
            self.deferred[tool.name] = tool_calls.DeferredAdapter(tool)
        return new

    def code_index(self) -> Any:
        if self._index is None:
            from indexer import Index

            self._index = Index(self.root)
        if not self.state.get("indexed"):
            self._index.update()
            self.state["indexed"] = True
        return self._index

    def redact(self, text: str) -> str:
        for name, value in self.secrets:
            text = text.replace(value, f"[REDACTED:{name}]")
        return text

    def final_text(self) -> str:
        for message in reversed(self.messages):
            if message["role"] == "assistant":
                texts = [b["text"] for b in message["content"] if b.get("type") == "text"]
                if texts:
                    return "\n".join(texts)
        return ""

    async def emit(self, kind: str, **data: Any) -> None:
        await self.host.emit(Event(kind, data, self.id))
