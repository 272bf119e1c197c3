"""What a session does when the provider refuses a request as too long for the context window:
believe the window the provider named (a local server is often started with a smaller one than
Kiln assumed), compact, and let the step run once more. Compaction's own guard (nothing new
since the last one) keeps this from looping. A reply cut at the output limit, or stopped as a refusal, is said so."""

from __future__ import annotations

from typing import Any

from agent.errors import ContextTooLong
from agent.events import StatusNote
from agent.types import ModelReply

NAMED_WINDOW = "window_named"  # state: [model id, the window its server named]


def model_id(model: Any) -> str:
    return str(getattr(model, "model", "") or model.name)


def restore_window(model: Any, state: dict[str, Any]) -> None:
    """A resumed session's model gets the window its server named before (when it is still the
    same model): the catalog's larger one would let requests grow past it again."""
    named = state.get(NAMED_WINDOW)
    if not (isinstance(named, list) and len(named) == 2 and named[0] == model_id(model)):
        return
    window = named[1]
    if isinstance(window, int) and 0 < window < int(getattr(model, "context_window", 0) or 0):
        model.context_window = window


async def compact_after_overflow(session: Any, exc: ContextTooLong) -> bool:
    """True when the transcript was compacted, so the request may be sent again."""
    model = session.model
    window = exc.window
    learned = bool(window and window < int(getattr(model, "context_window", 0) or 0))
    if learned:
        model.context_window = window
        session.state[NAMED_WINDOW] = [model_id(model), window]  # kept for a resume
    record = await session.compactor.compact(session, reason=f"the provider said: {exc}")
    if record is None:
        # Nothing to compact, but the window is smaller than the request assumed: asked again,
        # the request's max_tokens fits what the window leaves (``model_call.fit_to_window``).
        if learned and session.compactor.request_tokens(session) < window:
            await session.emit(
                StatusNote(
                    text=f"the request was too long for the model's context window ({window} "
                    "tokens); asked again for fewer output tokens"
                )
            )
            return True
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
            StatusNote(
                text="the model declined to answer (the provider stopped it: refusal"
                + (f": {reply.stop_detail})" if reply.stop_detail else ")")
            )
        )
    session.turn.reply_cut = reply.stop_reason in ("max_tokens", "model_context_window_exceeded")
    if reply.stop_reason == "max_tokens":
        where = f"the output limit ({max_tokens} tokens)"
    elif reply.stop_reason == "model_context_window_exceeded":  # Anthropic: prompt + reply full
        where = "the end of the model's context window"
    else:
        return
    calls = any(b.get("type") == "tool_use" for b in reply.message.get("content") or [])
    what = "its last tool call may be incomplete" if calls else "the answer may be incomplete"
    # the provider's own account of what the cut left (the embedded model's: a call cut before
    # its name, run as nothing and shown as nothing)
    what = reply.stop_detail or what
    await session.emit(StatusNote(text=f"the model's reply stopped at {where}; {what}"))
