"""What a model reply costs a session: the spend (priced, and stored per step), the share of
the context window the reply measured (the status bar's, resumed from the store), and the usage
event the front-ends show. A failed request's billed attempts are spend too."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from agent.events import StatusNote, UsageReported
from agent.providers.pricing import cost_usd, price_for
from agent.turn import Hold, TurnEnded
from agent.types import ModelReply, Request, Usage


def record(session: Any, model: str, usage: Usage) -> None:
    """Add billed usage (a reply's, or what failed attempts had reported) to the spend."""
    cost = cost_usd(model, usage)
    turn = session.turn
    turn.add_usage(usage, cost, unpriced="" if price_for(model) else model)
    session.store.record_usage(session.id, turn.step_count, turn.number, model, usage, cost)


def hold(session: Any, request: Request, tokens: Callable[[], int]) -> Hold | None:
    """Before ``request`` (of about ``tokens()`` input tokens) is sent: raise ``TurnEnded`` at a
    step limit, or when the cost limit has no room for it; otherwise hold what it may cost, its
    ``max_tokens`` capped to what the limit can pay. Nothing is awaited between this and the
    sending, so sub-agents running at once cannot both pass a check only one of them fits."""
    session.turn.budget.check_steps()
    if not session.turn.budget.limited:
        return None
    model = str(getattr(session.model, "model", "") or "")
    held = session.turn.reserve(model, tokens(), request.max_tokens)
    if held is not None:
        request.max_tokens = held.output_tokens
        request.before_retry = functools.partial(before_retry, session)
    return held


def before_retry(session: Any, billed: Usage) -> None:
    """Before a request is sent again after failed attempts that were billed ``billed``: the
    attempt held what the request may cost, so another one fits while the cost limit has room
    for what they were billed besides; otherwise that is spend, and the turn ends."""
    model = str(getattr(session.model, "model", "") or session.model.name)
    cost = cost_usd(model, billed)
    if cost <= session.turn.budget.room_usd():
        return
    record(session, model, billed)
    raise TurnEnded("max_cost", f"the provider failed after billing ${cost:.4f}, and another "
                                "attempt could cross the cost limit; it was not made")  # fmt: skip


async def account(session: Any, reply: ModelReply, held: Hold | None = None) -> None:
    """A reply's spend and context use, then its usage event; ``TurnEnded`` when the cost limit's
    cap on its output (``held``) cut it off. Under a cost limit, a reply whose
    provider measured nothing (a proxy that drops usage, a server that refused
    ``stream_options``) counts as the most its request could cost, what it ``held``: counted as
    0, it let the limit never fire."""
    record(session, reply.model or session.model.name, reply.usage + reply.discarded)
    if held is not None and reply.usage + reply.discarded == Usage():
        session.turn.budget.charge(held.usd)
        await session.emit(StatusNote(text=f"the provider reported no usage for this reply: "
                                           f"${held.usd:.4f}, the most it could cost, is counted "
                                           "against the cost limit"))  # fmt: skip
    session.turn.prompt_tokens = reply.usage.total_input
    window = getattr(session.model, "context_window", 0) or 0
    if window:
        used = reply.usage.total_input + reply.usage.output_tokens
        session.status.context_used = used / window
    await session.emit(
        UsageReported(
            input_tokens=reply.usage.input_tokens,
            cache_read_tokens=reply.usage.cache_read_tokens,
            cache_write_tokens=reply.usage.cache_write_tokens,
            output_tokens=reply.usage.output_tokens,
            cost_usd=round(session.turn.cost_before + session.turn.cost_usd, 6),  # the session's
            step=session.turn.step_count,
        )
    )
    if held and held.capped and reply.stop_reason == "max_tokens":
        run = session.turn.budget.limits()[-1]  # the run's, when this is a sub-agent
        raise TurnEnded("max_cost", f"the reply was cut at {held.output_tokens:,} output tokens, "
                                    "all the cost limit left room for "
                                    f"(${run.spent:.4f} of ${run.max_cost_usd:g} spent)")  # fmt: skip
