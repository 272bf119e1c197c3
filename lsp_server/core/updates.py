"""Agent ``Event``s to ACP v1 ``session/update`` payloads, and ACP permission shapes.

One mapping for both front-ends: the LSP server sends these dicts as ``kiln/session/update``,
the ACP server as ``session/update``; Kiln-only kinds are listed apart so ACP can filter them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, assert_never, cast

from agent.events import (
    AgentEvent,
    Compacted,
    EditProposed,
    ErrorReported,
    MemoryProposed,
    PermissionAsked,
    PlanUpdated,
    Refused,
    StatusNote,
    TextChunk,
    ThoughtChunk,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    TurnDone,
    UsageReported,
)
from agent.protocols import Decision, PermissionRequest
from agent.tool_call_text import title as tool_title  # the same title the live tool_call had
from agent.types import text_block
from lsp_server.core.prompts import reference_block, resolved
from lsp_server.headless.terminal import (  # titles and prompts: no control or bidi characters
    safe,
    title_line,
)

DECISIONS = ("allow_once", "allow_always", "reject_once", "reject_always")
PERMISSION_OPTIONS: list[dict[str, str]] = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"},
]
# sessionUpdate kinds defined by ACP v1; the others below are Kiln extensions an ACP
# front-end may drop or fold into agent_thought_chunk.
ACP_UPDATE_KINDS = frozenset(
    {"agent_message_chunk", "user_message_chunk", "agent_thought_chunk", "tool_call",
     "tool_call_update", "plan", "usage_update", "session_info_update"}
)  # fmt: skip
ACP_TOOL_KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"}
)


# Streamed text arriving within this window goes out as one agent_message_chunk (both servers).
COALESCE_SECONDS = 0.02


def is_text_chunk(update: dict[str, Any]) -> bool:
    """A plain streamed-text update, which a front-end may merge with its neighbours."""
    content = update.get("content")
    return (
        update.get("sessionUpdate") == "agent_message_chunk"
        and len(update) == 2
        and isinstance(content, dict)
        and content.get("type") == "text"
        and isinstance(content.get("text"), str)
    )


def _abs(root: Path, path: str) -> str:
    """The path resolved; as named when it cannot be (a link loop: the tool fails on it)."""
    return str(resolved(root / path) or root / path) if path else str(root)


def _locations(root: Path, path: Any, line: Any = None) -> list[dict[str, Any]]:
    """A tool call's ``locations``: only a path inside the workspace. A client following the
    agent opens these; a refused ``../`` or ``/etc`` path, or a link loop, is no place the
    call touched."""
    if not isinstance(path, str) or not path:
        return []
    where = resolved(root / path)
    base = root.resolve()
    if where is None or (where != base and base not in where.parents):
        return []
    return [{"path": str(where), **({"line": line} if line else {})}]


def _text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def diff_content(root: Path, path: str, old: str | None, new: str) -> dict[str, Any]:
    """ACP's ``diff`` content; ``old`` None (a new file) leaves ``oldText`` out, as ACP asks."""
    diff = {"type": "diff", "path": _abs(root, path), "oldText": old, "newText": new}
    if old is None:
        del diff["oldText"]
    return diff


def event_to_update(
    event: AgentEvent, *, root: Path, context_window: int = 0
) -> dict[str, Any] | None:
    """Map one agent event to an ACP-shaped ``update`` dict; None for events with no update."""
    match event:
        case TextChunk(text=text):
            return {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
            }
        case ThoughtChunk(text=text):
            return {
                "sessionUpdate": "agent_thought_chunk",
                "content": {"type": "text", "text": text},
            }
        case ToolCallStarted():  # ACP: pending until it runs (a permission may be asked first)
            return {
                "sessionUpdate": "tool_call",
                "toolCallId": event.id,
                "title": title_line(event.title or event.name),
                "kind": event.tool_kind if event.tool_kind in ACP_TOOL_KINDS else "other",
                "status": "pending",
                "locations": [
                    where
                    for loc in event.locations
                    for where in _locations(root, loc.get("path"), loc.get("line"))
                ],
                "rawInput": event.arguments,
                "_meta": {"tool": event.name},
            }
        case ToolCallRunning():
            return {"sessionUpdate": "tool_call_update", "toolCallId": event.id,
                    "status": "in_progress"}  # fmt: skip
        case ToolCallFinished():
            return {
                "sessionUpdate": "tool_call_update",
                "toolCallId": event.id,
                "status": event.status,
                "content": [_text_content(event.output)],
                "rawOutput": {"isError": event.is_error, "durationMs": event.duration_ms},
            }
        case EditProposed():
            return {
                "sessionUpdate": "tool_call_update",
                "toolCallId": event.id,
                "kind": "edit",
                "content": [
                    diff_content(
                        root, event.path, None if event.created else event.old_text, event.new_text
                    )
                ],
                "_meta": {"proposalId": event.proposal_id, "path": event.path},
            }
        case PlanUpdated(entries=entries):
            return {
                "sessionUpdate": "plan",
                "entries": [
                    {
                        "content": e.get("content", ""),
                        "priority": e.get("priority", "medium"),
                        "status": e.get("status")
                        if e.get("status") in ("pending", "in_progress", "completed")
                        else "pending",
                        "_meta": {"id": str(e.get("id", ""))},
                    }
                    for e in entries
                ],
            }
        case UsageReported():
            return {
                "sessionUpdate": "usage_update",
                "used": event.input_tokens
                + event.cache_read_tokens
                + event.cache_write_tokens
                + event.output_tokens,
                "size": int(context_window),
                "cost": {"amount": float(event.cost_usd), "currency": "USD"},
                "_meta": {
                    "inputTokens": event.input_tokens,
                    "cacheReadTokens": event.cache_read_tokens,
                    "cacheWriteTokens": event.cache_write_tokens,
                    "outputTokens": event.output_tokens,
                    "step": event.step,
                },
            }
        case StatusNote(text=text):
            return status_update(text)
        case Compacted():
            fields = event.to_dict()
            del fields["kind"], fields["session_id"], fields["parent_tool_call_id"]
            return {"sessionUpdate": "compaction", **fields}
        case Refused():
            return {
                "sessionUpdate": "refusal",
                "toolCallId": event.id,
                "tool": event.tool,
                "reason": event.reason,
            }
        case MemoryProposed():
            return {
                "sessionUpdate": "memory_proposal",
                "text": event.text,
                "fromExternal": event.from_external,
                "turn": event.turn,
            }
        case ErrorReported():
            return {"sessionUpdate": "error", "message": event.message, "hint": event.hint}
        case PermissionAsked() | TurnDone():
            return None  # the permission request itself is the signal; the prompt result is
        case _:
            assert_never(event)


def status_update(text: str) -> dict[str, Any]:
    """A status line (Kiln's own kind: ACP's front-end shows it as thinking)."""
    return {"sessionUpdate": "status", "text": text}


def closed_tool_call(call_id: str, reason: str) -> dict[str, Any]:
    """The last update of a tool call the turn stopped before it finished."""
    text = f"not finished: the turn ended ({reason})"
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed",
        "content": [_text_content(text)],
        "rawOutput": {"isError": True, "durationMs": 0, "stopReason": reason},
    }


def permission_tool_call(request: PermissionRequest, *, root: Path) -> dict[str, Any]:
    """The ``toolCall`` of a requestPermission: ACP ToolCallUpdate shape plus Kiln's reason."""
    call: dict[str, Any] = {
        "toolCallId": request.call_id,
        "title": title_line(request.title),
        "kind": "edit"
        if request.edit
        else ("execute" if request.tool == "run_command" else "other"),
        "status": "pending",
        "rawInput": request.arguments,
        "_meta": {
            "tool": request.tool,
            "reason": request.reason,
            "fromExternal": request.from_external,
        },
    }
    if request.edit is not None:
        e = request.edit
        call["content"] = [
            diff_content(root, e.path, None if e.created else e.old_text, e.new_text)
        ]
        call["locations"] = _locations(root, e.path)
        call["_meta"]["proposalId"] = e.proposal_id
    elif request.detail:
        # The full command with its parsed parts, or the memory text: what is approved, with
        # control and bidi characters escaped (``rawInput`` keeps the exact arguments).
        call["content"] = [_text_content(safe(request.detail))]
        call["_meta"]["detail"] = safe(request.detail)
    return call


def answer_withdrawn(answer: Any) -> bool:
    """ACP's ``cancelled`` outcome: the client withdrew the question (it is cancelling the
    turn); nobody chose an option."""
    outcome = answer.get("outcome") if isinstance(answer, dict) else None
    return isinstance(outcome, dict) and outcome.get("outcome") == "cancelled"


def answer_readable(answer: Any) -> bool:
    """Whether ``answer`` is a permission answer at all: ACP's ``{"outcome": {"outcome":
    "selected" | "cancelled", ...}}``, ``{"optionId": ...}`` or a bare option id. Anything else
    (``{}``, ``null``) is a failed request, not the user's "no"."""
    if isinstance(answer, str):
        return True
    if not isinstance(answer, dict):
        return False
    outcome = answer.get("outcome")
    if isinstance(outcome, dict):
        return outcome.get("outcome") in ("selected", "cancelled")
    return "optionId" in answer


def unoffered_option(answer: Any) -> object | None:
    """The option id a selected answer names when it is none of ``PERMISSION_OPTIONS`` (ACP:
    the client picks one of the options offered), else None. Such an answer is a client bug,
    not the user's "no"."""
    if isinstance(answer, dict):
        outcome = answer.get("outcome", answer)
        if not isinstance(outcome, dict) or outcome.get("outcome", "selected") != "selected":
            return None
        answer = outcome.get("optionId")
    return None if answer in DECISIONS else answer


def decision_from_answer(answer: Any) -> Decision:
    """Accept ACP's ``{"outcome": {"outcome": "selected", "optionId": ...}}`` or a bare id."""
    if isinstance(answer, dict):
        outcome = answer.get("outcome", answer)
        if isinstance(outcome, dict):
            answer = (
                outcome.get("optionId")
                if outcome.get("outcome", "selected") == "selected"
                else None
            )
        else:
            answer = answer.get("optionId")
    return cast(Decision, answer) if answer in DECISIONS else "reject_once"


def acp_stop_reason(reason: str) -> str:
    """Agent stop reasons to ACP's (end_turn, max_tokens, max_turn_requests, refusal, cancelled)."""
    return {"max_steps": "max_turn_requests", "max_time": "max_turn_requests",
            "max_cost": "max_turn_requests", "repeated_failure": "max_turn_requests",
            "error": "end_turn"}.get(reason, reason)  # fmt: skip


def history_updates(
    messages: list[dict[str, Any]],
    *,
    root: Path,
    tool_kinds: dict[str, str] | None = None,
    thoughts: dict[int, str] | None = None,
    stops: dict[int, str] | None = None,
) -> list[dict[str, Any]]:
    """Replay a stored transcript as updates (ACP ``session/load`` streams the history).

    Tail blocks the harness appended (environment, memory, status) are not the user's words and
    are skipped (a ``<reference>`` the user attached is kept, as the content block it came
    from); tool results become finished tool
    calls. ``tool_kinds`` (tool name -> ACP kind) lets clients show the right icon;
    ``thoughts`` (message index -> the thinking streamed before it) come back as thinking;
    ``stops`` (message index -> the note of a limit that ended the turn before it) as the
    ``status`` update the live turn sent (ACP's front-end shows it as that turn did).
    """

    kinds = tool_kinds or {}
    updates: list[dict[str, Any]] = []
    ends = stops or {}
    for seq, message in enumerate(messages):
        if note := ends.get(seq):
            updates.append(status_update(note))
        if (thought := (thoughts or {}).get(seq)) and message["role"] == "assistant":
            updates.append({"sessionUpdate": "agent_thought_chunk", "content": text_block(thought)})
        for block in message.get("content", []):
            kind = block.get("type")
            if kind == "text" and message["role"] == "user":
                text = block["text"].lstrip()
                if not text.startswith("<") or text.startswith("<reference "):
                    content = reference_block(block["text"], root) or text_block(block["text"])
                    updates.append({"sessionUpdate": "user_message_chunk", "content": content})
            elif kind == "text":
                updates.append(
                    {"sessionUpdate": "agent_message_chunk", "content": text_block(block["text"])}
                )
            elif kind == "tool_use":
                updates.append(
                    {
                        "sessionUpdate": "tool_call",
                        "toolCallId": block["id"],
                        "title": title_line(tool_title(block["name"], block.get("input", {}))),
                        "kind": kinds.get(block["name"], "other")
                        if kinds.get(block["name"]) in ACP_TOOL_KINDS
                        else "other",
                        "status": "pending",  # as live; its result follows as an update
                        "rawInput": block.get("input", {}),
                        "_meta": {"tool": block["name"]},
                    }
                )
                if where := _locations(root, (block.get("input") or {}).get("path")):
                    updates[-1]["locations"] = where
            elif kind == "tool_result":
                content = block.get("content")
                text = content if isinstance(content, str) else str(content)
                updates.append(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": block["tool_use_id"],
                        "status": "failed" if block.get("is_error") else "completed",
                        "content": [_text_content(text[:4000])],
                    }
                )
    if note := ends.get(len(messages)):  # the last turn's
        updates.append(status_update(note))
    return updates
