"""What a model reply costs a session: the spend (priced, and stored per step), the share of
the context window the reply measured (the status bar's, resumed from the store), and the usage
event the front-ends show. A failed request's billed attempts are spend too."""

from __future__ import annotations

from typing import Any

from agent.events import UsageReported
from agent.providers.pricing import cost_usd, price_for
from agent.types import ModelReply, Usage


def record(session: Any, model: str, usage: Usage) -> None:
    """Add billed usage (a reply's, or what failed attempts had reported) to the spend."""
    cost = cost_usd(model, usage)
    turn = session.turn
    turn.add_usage(usage, cost, unpriced="" if price_for(model) else model)
    session.store.record_usage(session.id, turn.step_count, turn.number, model, usage, cost)


async def account(session: Any, reply: ModelReply) -> None:
    """A reply's spend and context use, then its usage event."""
    record(session, reply.model or session.model.name, reply.usage + reply.discarded)
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
