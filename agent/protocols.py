"""The seams of the harness, as small Protocols. Implementations need not inherit from them.

- ``Model``: a provider. ``stream`` yields ``TextDelta``/``ToolCallDelta`` items and ends with
  exactly one ``ModelReply``.
- ``Tool``: a built-in or deferred tool; ``run`` returns the text the model sees or raises
  ``ToolError``.
- ``Host``: what a front-end (CLI, language server, ACP, CI) supplies: where events go, how a
  permission question is answered, unsaved buffer text, and how an edit reaches the files.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from agent.types import Event, Request, StreamItem, ToolSpec


@runtime_checkable
class Model(Protocol):
    name: str
    context_window: int

    def stream(self, request: Request) -> AsyncIterator[StreamItem]: ...


@dataclass
class ToolContext:
    """What a running tool may touch. ``session`` is the live ``agent.session.Session``."""

    root: Path
    session: Any
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


EditOutcome = Literal["applied", "rejected", "stale", "deferred"]


class Host(Protocol):
    async def emit(self, event: Event) -> None: ...

    async def request_permission(self, request: PermissionRequest) -> Decision:
        """The user's answer; raises ``agent.errors.NoAnswer`` when nobody answered."""
        ...

    def read_buffer(self, path: Path) -> str | None:
        """Text of an open, possibly unsaved document; None to read the disk."""
        ...

    async def apply_edit(self, edit: EditProposal) -> EditOutcome: ...
