"""The seams of the harness, as small Protocols. Implementations need not inherit from them.

- ``Model``: a provider. ``stream`` yields ``TextDelta``/``ToolCallDelta`` items and ends with
  exactly one ``ModelReply``.
- ``Tool``: a built-in or deferred tool; ``run`` returns the text the model sees or raises
  ``ToolError``.
- ``Host``: what a front-end (CLI, language server, ACP, CI) supplies: where events go, how a
  permission question is answered, unsaved buffer text, and how an edit reaches the files.
- ``ToolServices``: what a running tool may ask of its session (reads, edits, plans, memory,
  the code index, sub-agents); ``ToolContext.session`` is one.
- ``SessionView`` and ``Extension``: what a session extension (compaction, the taint tracker,
  the skills catalog) sees of the session, and the three hooks it implements.
- ``TurnDriver``: what the agent loop drives (``agent.loop.run_turn``).
- ``ToolSpecs``: the tool definitions the context assembler puts in the request.

These Protocols are how one part of ``agent/`` sees another without importing it, which keeps
the package free of import cycles (``tests/agent/test_architecture.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from agent.config import AgentConfig
from agent.events import AgentEvent
from agent.session_store import SessionStore
from agent.status import StatusBar
from agent.transcript import Transcript
from agent.turn import TurnState
from agent.types import Block, ModelReply, Request, StopReason, StreamItem, ToolSpec
from agent.workspace import Workspace


@runtime_checkable
class Model(Protocol):
    name: str
    context_window: int

    def stream(self, request: Request) -> AsyncIterator[StreamItem]: ...


class ToolServices(Protocol):
    """What a running tool may ask of its session (``agent.services.SessionServices``)."""

    id: str
    root: Path
    workspace: Workspace
    command_env: dict[str, str]  # extra environment for commands the agent runs
    sandbox: Any  # agent.sandbox.Sandbox: confines the commands (None: run as given)

    def network_granted(self, call_id: str) -> bool:
        """Whether the permission check granted this command call the network."""
        ...

    def read_text(self, path: Path, name: str = "") -> str: ...

    def read_denied(self, path: str | Path) -> bool:
        """Whether a read deny rule covers ``path`` (grep, list_files, search_code skip it)."""
        ...

    def touch(self, path: Path) -> None: ...

    async def propose_edit(self, path: Path, old: str, new: str, *, call_id: str = "") -> str: ...

    async def set_todos(self, items: list[dict[str, Any]]) -> None: ...

    async def propose_memory(self, text: str, *, call_id: str = "") -> str: ...

    async def run_subagent(self, description: str, call_id: str = "") -> str: ...

    def code_index(self) -> Any: ...

    def search_sessions(self, query: str, limit: int) -> list[dict[str, Any]]: ...

    def redact(self, text: str) -> str: ...

    def announce_tools(self, tools: list[Any]) -> list[Any]: ...


@dataclass
class ToolContext:
    """What a running tool may touch."""

    root: Path
    session: ToolServices
    call_id: str = ""


class Tool(Protocol):
    spec: ToolSpec
    # "read" | "edit" | "execute" | "search" | "think" | "fetch" | "other" (ACP tool kinds)
    kind: str

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str: ...


Decision = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


@dataclass
class EditProposal:
    """A whole-file edit: the host may apply it itself (editor) or let it hit the disk."""

    path: str  # workspace-relative
    old_text: str  # the full file text the edit was computed against
    new_text: str  # the full file text after the edit
    proposal_id: str = ""
    call_id: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    created: bool = False  # the file does not exist yet (``old_text`` is then "")


@dataclass
class PermissionRequest:
    tool: str
    title: str
    arguments: dict[str, Any]
    reason: str = ""
    call_id: str = ""
    # Set when the action was requested from inside external content (injection defence).
    from_external: bool = False
    # For edits: the proposed change, so the front-end can show a diff before answering.
    edit: EditProposal | None = None
    # What is approved, in full, for front-ends to show: the command line with its parsed
    # simple commands (and whether it gets the network), the text ``remember`` would store.
    detail: str = ""


EditOutcome = Literal["applied", "rejected", "stale", "deferred"]


class Host(Protocol):
    @property
    def unattended_reason(self) -> str:
        """Why nobody can be asked (headless without a terminal); "" when someone can."""
        ...

    async def emit(self, event: AgentEvent) -> None: ...

    async def request_permission(self, request: PermissionRequest) -> Decision:
        """The user's answer; raises ``agent.errors.NoAnswer`` when nobody answered."""
        ...

    def read_buffer(self, path: Path) -> str | None:
        """Text of an open, possibly unsaved document; None to read the disk."""
        ...

    async def apply_edit(self, edit: EditProposal) -> EditOutcome: ...


class SessionView(Protocol):
    """What a session extension sees of its session."""

    id: str
    model: Model
    config: AgentConfig
    store: SessionStore
    state: dict[str, Any]  # persisted with the session
    transcript: Transcript
    turn: TurnState
    status: StatusBar

    def build_request(self) -> Request: ...

    def announce_tools(self, tools: list[Any]) -> list[Any]: ...

    async def emit(self, event: AgentEvent) -> None: ...


class Extension(Protocol):
    """A context source registered with a session: compaction, the taint tracker, skills."""

    def tail_block(self, session: SessionView) -> str | None:
        """Text to append at the tail of the next user message, or None."""
        ...

    async def before_request(self, session: SessionView) -> None: ...

    async def aclose(self) -> None: ...


class ToolSpecs(Protocol):
    """The tool definitions a request carries: built-ins (prefix) and announced deferred ones."""

    def specs(self) -> list[ToolSpec]: ...

    def deferred_specs(self) -> list[ToolSpec]: ...


class TurnDriver(Protocol):
    """What ``agent.loop.run_turn`` drives: one turn of a session (``agent.session_turn``)."""

    config: AgentConfig

    @property
    def cancel_reason(self) -> StopReason: ...

    def begin_turn(self, prompt: list[Block]) -> None: ...

    def check_limits(self) -> None: ...

    async def step(self) -> ModelReply: ...

    async def run_tools(self, calls: list[Block]) -> list[Block]: ...

    async def note_stop(self, detail: str) -> None: ...

    async def provider_failed(self, exc: Exception) -> None: ...

    async def end_turn(self, reason: StopReason) -> None: ...
