"""The agent loop: call the model, run the tools it asks for, append the results, repeat.

Control flow is by small exceptions: a limit ends the turn by raising ``TurnEnded`` with a
stop reason; a reply the provider stopped as a refusal ends it with ``refusal`` (none of its calls
run; ``agent.refused_turn`` takes that turn out before the next), a last one cut at the output
limit with ``max_tokens``; one the provider paused (``pause_turn``) is sent back as it is,
which resumes it. The transcript is written as messages are appended, and the
turn is closed in ``finally`` so a crash, a cancel or a provider error leaves a consistent session.
"""

from __future__ import annotations

import asyncio

from agent.errors import ProviderError
from agent.protocols import TurnDriver
from agent.turn import TurnEnded
from agent.types import Block, StopReason


async def run_turn(session: TurnDriver, prompt: list[Block]) -> StopReason:
    reason: StopReason = "end_turn"
    session.begin_turn(prompt)
    try:
        while True:
            session.check_limits()
            reply = await session.step()
            if reply.stop_reason == "refusal":  # declined: no call of it runs, the turn ends
                reason = "refusal"
                break
            calls = [b for b in reply.message["content"] if b.get("type") == "tool_use"]
            if not calls:
                match reply.stop_reason:  # stopped by the provider
                    case "max_tokens" | "model_context_window_exceeded":  # cut: output limit
                        reason = "max_tokens"  # or the end of the context window
                    case "pause_turn":  # paused a long turn: the reply sent back resumes it
                        continue  # as one more step, so the turn's limits bound it
                break
            await session.run_tools(calls)
    except TurnEnded as ended:
        reason = ended.reason
        await session.note_stop(ended.detail or reason)
    except ProviderError as exc:
        reason = "error"
        await session.provider_failed(exc)
    except asyncio.CancelledError:
        reason = session.cancel_reason  # "cancelled", or the time limit that interrupted a tool
        if reason != "cancelled":
            await session.note_stop(f"time limit reached ({session.config.max_seconds:g}s)")
    finally:
        await session.end_turn(reason)
    return reason
