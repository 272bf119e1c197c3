"""A turn the provider declined (``stop_reason: refusal``) leaves the conversation before the next
one: Anthropic's API refuses every later request that still holds it ("reset the conversation
context by removing or updating the turn that was refused"). The turn stays on screen and in
the store (an older epoch, recorded like a compaction); the next request is the messages before
it, byte for byte (so the prompt cache still serves them), and a note saying what went.

Functions over a ``Session`` (as ``agent.overflow`` is): the mark is written when the turn ends
and acted on when the next begins, so ``kiln run`` still reports the refused reply, and a resume
in another process drops it too (the mark lives in the session's state)."""

from __future__ import annotations

from typing import Any

from agent.compaction_store import CompactionRecord, store_epoch
from agent.types import Block, Message, canonical_json

# state: [epoch, first message of the turn, tail blocks before the prompt, notes kept for the
# model (``Session.landed_late``) that later messages of the turn carried]
REFUSED = "refused_turn"
NOTE = (
    "<conversation_note>\nThe provider declined the previous turn (stop reason: refusal); its "
    "messages were removed from this conversation, as the provider requires before going on. "
    "The user saw that turn.\n</conversation_note>"
)


def mark(
    session: Any,
    reason: str,
    start: tuple[int, int, int] | None,
    prompt: list[Block],
    notes: list[str],
) -> None:
    """At the end of a turn: remember where a refused turn began (``start``: epoch, message
    index, tail blocks; ``prompt``: the blocks it was asked with), found again in the messages
    a compaction during the turn rewrote, and the kept notes its later messages carried
    (``notes``: told to the model once, they must not go with the turn)."""
    session.state.pop(REFUSED, None)
    if reason != "refusal" or start is None:
        return
    epoch, index, tail = start
    if epoch != session.transcript.epoch:
        index, tail = _found_again(session.transcript.messages, index, tail, prompt)
    session.state[REFUSED] = [session.transcript.epoch, index, tail, list(notes)]


def _found_again(
    messages: list[Message], index: int, tail: int, prompt: list[Block]
) -> tuple[int, int]:
    """Where a turn that a compaction rewrote begins now. A compaction keeps the first message
    (its own blocks, then the history) and the latest rounds, the user's words as they were (not
    always the tail blocks before them: an old status bar goes). A turn that began the session
    still begins it; one whose first message was kept begins there (the last user message that
    ends with its prompt: an earlier turn may have said the same); one whose first message was
    summarised begins right after the first message, with no tail blocks of its own to carry."""
    if index == 0:
        return 0, tail
    for i in range(len(messages) - 1, 0, -1):
        content = messages[i].get("content")
        if not (prompt and messages[i].get("role") == "user" and isinstance(content, list)):
            continue
        if len(content) >= len(prompt) and content[len(content) - len(prompt) :] == prompt:
            return i, len(content) - len(prompt)
    return 1, 0


def drop(session: Any) -> None:
    """At the start of a turn: take the refused one out of the messages the next request sends."""
    where = session.state.pop(REFUSED, None)
    messages = session.transcript.messages
    # three entries: marked before the notes were kept with it
    if not (
        isinstance(where, list) and len(where) in (3, 4) and where[0] == session.transcript.epoch
    ):
        return
    start, tail = int(where[1]), int(where[2])
    notes = where[3] if len(where) == 4 and isinstance(where[3], list) else []
    if not 0 <= start < len(messages):
        return
    kept, removed = messages[:start], messages[start:]
    first = removed[0].get("content")
    # What the refused turn's first message carried besides the prompt (the environment, memory,
    # the skill catalog…) was told to nobody now: it goes with the next message instead, as do
    # the notes its later messages carried (an edit that landed after all).
    carried = [str(b.get("text", "")) for b in (first if isinstance(first, list) else [])[:tail]]
    session.context.add(*carried, *(str(note) for note in notes), NOTE)
    record = CompactionRecord(
        epoch=session.transcript.epoch + 1,
        tier=0,
        reason="the provider declined the turn (refusal): removed before the next one",
        before_tokens=len(canonical_json(messages)) // 4,
        after_tokens=len(canonical_json(kept)) // 4,
        removed_messages=len(removed),
        kept_messages=len(kept),
        source="none",
        archive=f"message epoch {session.transcript.epoch} of the session store",
    )
    store_epoch(session.store, session.id, kept, record, session.state)
    session.transcript.start_epoch(record.epoch, kept)
