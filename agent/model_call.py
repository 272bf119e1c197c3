"""One model request of a turn: extensions run, the request is recorded (store and wire log),
the reply streamed to the host as it comes, then appended and paid for.

Functions over a ``Session`` (as ``agent.overflow`` and ``agent.spend`` are): the session owns
the parts, this module is the order in which a step uses them."""

from __future__ import annotations

import functools
from typing import Any

from agent import spend, wire_log
from agent.errors import ProviderError
from agent.events import TextChunk, ThoughtChunk
from agent.overflow import note_cut_off
from agent.turn import Hold
from agent.types import ModelReply, Request, TextDelta, ThinkingDelta


async def request_reply(session: Any) -> ModelReply:
    """Extensions first, then stream the reply and account for it."""
    await session.context.before_request(session)
    request = session.build_request()
    fit_to_window(session, request)
    # its input is paid however the reply goes, and its output is capped to the limit
    held = spend.hold(
        session, request, functools.partial(session.compactor.request_tokens, session)
    )
    try:
        session.turn.next_step()
        return await _send(session, request, held)
    finally:
        session.turn.release(held)


FLOOR = 1024  # output tokens always asked for: under that, compaction's turn, not the reply's
MARGIN = 1.1  # the prompt estimate (characters / 4) is short of a real tokenizer's count


def fit_to_window(session: Any, request: Request) -> None:
    """Ask for no more output than the window leaves beside the prompt: a server started with a
    small window (vLLM, llama.cpp) refuses a request whose prompt and ``max_tokens`` together
    exceed it, however short the prompt."""
    window = int(getattr(session.model, "context_window", 0) or 0)
    if window:
        room = window - int(session.compactor.request_tokens(session) * MARGIN)
        request.max_tokens = min(request.max_tokens, max(room, FLOOR))


async def _send(session: Any, request: Request, held: Hold | None) -> ModelReply:
    wire_log.record(
        session.store.folder(session.id), session.turn.step_count, session.model, request
    )
    session.store.record_request(
        session.id,
        session.turn.step_count,
        session.turn.number,
        session.transcript.epoch,
        len(session.transcript.messages),
        session.context.prefix(),
        list(session.runner.deferred),
        request.max_tokens,
    )
    reply: ModelReply | None = None
    thinking: list[str] = []
    try:
        async for item in session.model.stream(request):
            if isinstance(item, TextDelta):
                await session.emit(TextChunk(text=item.text))
            elif isinstance(item, ThinkingDelta):
                thinking.append(item.text)
                await session.emit(ThoughtChunk(text=item.text))
            elif isinstance(item, ModelReply):
                reply = item
    finally:  # what the provider sent, if it changed the request on the way
        wire_log.record_sent(
            session.store.folder(session.id), session.turn.step_count, session.model
        )
    if reply is None:
        raise ProviderError("the provider ended the stream without a reply")
    session.transcript.append(reply.message)
    if thinking:  # shown again when the session is loaded; never part of a request
        seq = len(session.transcript.messages) - 1
        session.store.record_thought(session.id, session.transcript.epoch, seq, "".join(thinking))
    # A provider may stop a reply before the session's limit (the embedded model: 256).
    limit = int(getattr(session.model, "output_limit", 0) or 0)
    await note_cut_off(
        session, reply, min(limit, request.max_tokens) if limit else request.max_tokens
    )
    await spend.account(session, reply, held)  # raises if the cost limit's cap cut it
    return reply
