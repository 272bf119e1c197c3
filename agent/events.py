"""What a session tells its host, one dataclass per kind.

Front-ends ``match`` on the class; each renderer ends with ``assert_never`` so a kind it forgets
fails the renderer test (``tests/agent/test_events.py``) instead of vanishing. ``kind`` is the
stable wire name (``kiln run --output-format stream-json`` prints it as ``type``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, get_args


@dataclass(kw_only=True)
class Event:
    """Base of every event; ``session_id`` is filled in by the session that emits it, and
    ``parent_tool_call_id`` names the ``task`` call whose sub-agent emitted it ("" for the
    session's own events)."""

    kind: ClassVar[str] = ""
    session_id: str = ""
    parent_tool_call_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self)}


@dataclass
class TextChunk(Event):
    kind: ClassVar[str] = "text_delta"
    text: str


@dataclass
class ThoughtChunk(Event):
    """Reasoning the model streamed apart from its answer (shown as thinking)."""

    kind: ClassVar[str] = "thought_delta"
    text: str


@dataclass
class ToolCallStarted(Event):
    kind: ClassVar[str] = "tool_call"
    id: str
    name: str
    title: str
    tool_kind: str = "other"  # ACP tool kind: read, edit, execute, search, think, fetch, other
    arguments: Any = field(default_factory=dict)
    locations: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ToolCallRunning(Event):
    """The call starts running: after its permission, when one was asked (until then it is
    pending); an edit once it is allowed, as it is applied."""

    kind: ClassVar[str] = "tool_call_running"
    id: str
    name: str


@dataclass
class ToolCallFinished(Event):
    kind: ClassVar[str] = "tool_call_update"
    id: str
    name: str
    status: str  # completed | failed
    output: str = ""
    is_error: bool = False
    duration_ms: int = 0


@dataclass
class EditProposed(Event):
    """An edit's diff, announced before the host applies it (or asks about it)."""

    kind: ClassVar[str] = "edit"
    id: str
    proposal_id: str
    path: str
    old_text: str
    new_text: str
    created: bool = False  # the file did not exist: there is no old text to show


@dataclass
class PlanUpdated(Event):
    kind: ClassVar[str] = "plan"
    entries: list[dict[str, Any]]


@dataclass
class UsageReported(Event):
    kind: ClassVar[str] = "usage"
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0  # the session's total so far, earlier processes included
    step: int = 0


@dataclass
class StatusNote(Event):
    kind: ClassVar[str] = "status"
    text: str


@dataclass
class Compacted(Event):
    kind: ClassVar[str] = "compaction"
    epoch: int
    tier: int
    reason: str
    before_tokens: int
    after_tokens: int
    removed_messages: int
    kept_messages: int
    source: str
    archive: str
    summary_tokens: int = 0


@dataclass
class PermissionAsked(Event):
    kind: ClassVar[str] = "permission"
    id: str
    tool: str
    reason: str = ""


@dataclass
class Refused(Event):
    kind: ClassVar[str] = "refusal"
    id: str
    tool: str
    reason: str = ""


@dataclass
class MemoryProposed(Event):
    kind: ClassVar[str] = "memory_proposal"
    text: str
    from_external: bool = False
    turn: int = 0


@dataclass
class ErrorReported(Event):
    kind: ClassVar[str] = "error"
    message: str
    hint: str = ""


@dataclass
class TurnDone(Event):
    kind: ClassVar[str] = "done"
    stop_reason: str


AgentEvent = (
    TextChunk
    | ThoughtChunk
    | ToolCallStarted
    | ToolCallRunning
    | ToolCallFinished
    | EditProposed
    | PlanUpdated
    | UsageReported
    | StatusNote
    | Compacted
    | PermissionAsked
    | Refused
    | MemoryProposed
    | ErrorReported
    | TurnDone
)


def event_classes() -> list[type[Event]]:
    """Every concrete event kind (what the renderer test enumerates)."""
    return list(get_args(AgentEvent))
