"""Turn state: the counters, limits, spend and outcomes of a session's turns.

One object owns them so the loop, the tool runner, compaction and the hosts' reports read the
same numbers; ``state`` is the session's persisted dict, from which a resumed session restores
its counters.
"""

from __future__ import annotations

import time
from typing import Any

from agent.config import AgentConfig
from agent.types import StopReason, Usage


class TurnEnded(Exception):
    """Ends a turn early with a stop reason (a limit, a refusal); the loop catches it."""

    def __init__(self, reason: StopReason, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason: StopReason = reason
        self.detail = detail


class TurnState:
    def __init__(self, state: dict[str, Any]) -> None:
        self.number = int(state.get("turns", 0))  # turns begun in this session
        self.step_count = int(state.get("steps", 0))  # model requests in this session
        self.steps = 0  # model requests in the current turn
        self.started = time.monotonic()
        self.usage = Usage()
        self.cost_usd = 0.0  # spent by this process (the limits count it)
        self.cost_before = 0.0  # spent by the processes that ran the session before this one
        self.unpriced = ""  # a model that answered this turn and has no known price
        # the last request's measured input: the most of the next one a prompt cache can serve
        self.prompt_tokens = int(state.get("prompt_tokens", 0))
        self.tainted = False  # external content is in the context this turn
        self.files_modified: list[str] = list(state.get("files_modified", []))
        self.refusals: list[dict[str, Any]] = []
        self.memory_proposals: list[dict[str, Any]] = []

    def begin(self) -> None:
        self.number += 1
        self.steps = 0
        self.started = time.monotonic()
        self.tainted = False

    def next_step(self) -> None:
        self.step_count += 1
        self.steps += 1

    def add_usage(self, usage: Usage, cost: float, *, unpriced: str = "") -> None:
        self.usage = self.usage + usage
        self.cost_usd += cost
        self.unpriced = self.unpriced or unpriced

    def modified(self, path: str) -> None:
        if path not in self.files_modified:
            self.files_modified.append(path)

    def check_limits(self, config: AgentConfig, model: str = "") -> None:
        """Raise ``TurnEnded`` when a step, time or cost limit is reached, or when a cost limit
        cannot be kept because ``model`` (or one that answered) has no known price: its spend
        would count as 0 and the limit would never fire."""
        if self.steps >= config.max_steps:
            raise TurnEnded("max_steps", f"step limit reached ({config.max_steps})")
        if config.max_seconds and time.monotonic() - self.started > config.max_seconds:
            raise TurnEnded("max_time", f"time limit reached ({config.max_seconds:g}s)")
        from agent.providers.pricing import price_for  # agent.providers imports this module

        unknown = self.unpriced or (model if model and price_for(model) is None else "")
        if config.max_cost_usd is not None and unknown:
            raise TurnEnded(
                "max_cost",
                f"the cost limit cannot be enforced: no price is known for model {unknown!r} "
                "(drop the cost limit, --max-cost-usd, to run it)",
            )
        if config.max_cost_usd is not None and self.cost_usd >= config.max_cost_usd:
            raise TurnEnded(
                "max_cost",
                f"cost limit reached (${self.cost_usd:.4f} of ${config.max_cost_usd:g})",
            )

    def check_request(self, config: AgentConfig, model: str, prompt_tokens: int) -> None:
        """Raise ``TurnEnded`` before a request of ``prompt_tokens`` input tokens whose least cost
        would take the spend past the cost limit: checking only after a reply let one large
        request on an expensive model overshoot the limit by any amount."""
        from agent.providers.pricing import least_cost_usd  # agent.providers imports this module

        if config.max_cost_usd is None:
            return
        least = least_cost_usd(model, prompt_tokens, self.prompt_tokens)
        if self.cost_usd + least > config.max_cost_usd:
            raise TurnEnded(
                "max_cost",
                f"the next request would cross the cost limit (${self.cost_usd:.4f} spent + at "
                f"least ${least:.4f} for its ~{prompt_tokens:,} input tokens > "
                f"${config.max_cost_usd:g}); it was not sent",
            )

    def saved(self) -> dict[str, Any]:
        """What goes back into the session's persisted state at the end of a turn."""
        return {
            "steps": self.step_count,
            "prompt_tokens": self.prompt_tokens,
            "turns": self.number,
            "files_modified": self.files_modified,
        }
