"""What a session does when the provider refuses a request as too long for the context window:
believe the window the provider named (a local server is often started with a smaller one than
Kiln assumed), compact, and let the step run once more. Compaction's own guard (nothing new
since the last one) keeps this from looping. A reply cut at the output limit, or stopped as a refusal, is said so."""

from __future__ import annotations

from typing import Any

from agent.errors import ContextTooLong
from agent.events import StatusNote
from agent.types import ModelReply


async def compact_after_overflow(session: Any, exc: ContextTooLong) -> bool:
    """True when the transcript was compacted, so the request may be sent again."""
    model = session.model
    window = exc.window
    if window and window < int(getattr(model, "context_window", 0) or 0):
        model.context_window = window
    record = await session.compactor.compact(session, reason=f"the provider said: {exc}")
    if record is None:
        return False
    await session.emit(
        StatusNote(
            text=f"the request was too long for the model's context window; compacted to "
            f"{record.after_tokens} tokens and asked again"
        )
    )
    return True


async def note_cut_off(session: Any, reply: ModelReply, max_tokens: int) -> None:
    """A reply that stopped at the output limit says so; otherwise a cut-off answer reads as a
    finished one (and ends the turn as if it were)."""
    if reply.stop_reason == "refusal":
        await session.emit(
            StatusNote(text="the model declined to answer (the provider stopped it: refusal)")
        )
    if reply.stop_reason != "max_tokens":
        return
    calls = any(b.get("type") == "tool_use" for b in reply.message.get("content") or [])
    what = "its last tool call may be incomplete" if calls else "the answer may be incomplete"
    await session.emit(
        StatusNote(
            text=f"the model's reply stopped at the output limit ({max_tokens} tokens); {what}"
        )
    )
