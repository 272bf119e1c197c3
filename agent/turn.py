"""Turn state: the counters, limits, spend and outcomes of a session's turns.

One object owns them so the loop, the tool runner, compaction and the hosts' reports read the
same numbers; ``state`` is the session's persisted dict, from which a resumed session restores
its counters. The limits are a ``Budget`` of requests and money that a sub-agent's budget draws
from: what the sub-agents of one run send and spend is the run's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from agent.config import AgentConfig
from agent.types import StopReason, Usage, canonical_json


class TurnEnded(Exception):
    """Ends a turn early with a stop reason (a limit, a refusal); the loop catches it."""

    def __init__(self, reason: StopReason, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason: StopReason = reason
        self.detail = detail


# Identical failures in a row (one call, same arguments, same error) that end a turn: a model that
# ignores the status bar's warning (``agent.status.REPEAT_LIMIT``, 3) would spend every step left.
STUCK_LIMIT = 5


# A reply the cost limit leaves room for fewer output tokens than this is not worth sending: it
# would be cut before it could say or do anything useful.
FLOOR_TOKENS = 1024


@dataclass
class Hold:
    """What one request holds of the budget until its spend is known."""

    usd: float
    output_tokens: int  # the request's max_tokens, capped to what the cost limit can pay
    capped: bool = False  # the cost limit lowered it (a reply cut there ended by the limit)


class Budget:
    """The steps and money a turn may use. A sub-agent's budget has its parent's as ``parent``:
    what it sends and spends counts against both, as it happens. Several sub-agents run at once,
    so a request *holds* the most it may cost (its estimated input, its capped output) until its
    spend is known: what one holds, no other can promise. Checks and holds are synchronous, so
    sub-agents on one event loop cannot both pass a check that only one of them fits."""

    def __init__(
        self, max_steps: int, max_cost_usd: float | None, parent: Budget | None = None
    ) -> None:
        self.max_steps = max_steps
        self.max_cost_usd = max_cost_usd
        self.parent = parent
        self.steps = 0  # requests sent in the turn (sub-agents' included)
        self.spent = 0.0  # USD spent by this process (likewise)
        self.held = 0.0  # the most the requests on the way may still cost

    def chain(self) -> list[Budget]:
        out: list[Budget] = []
        budget: Budget | None = self
        while budget is not None:
            out.append(budget)
            budget = budget.parent
        return out

    def limits(self) -> list[Budget]:
        return [b for b in self.chain() if b.max_cost_usd is not None]

    @property
    def limited(self) -> bool:
        """Whether a cost limit applies (this budget's or one it draws from)."""
        return bool(self.limits())

    def room_usd(self) -> float:
        """What may still be spent after what requests on the way hold (a cost limit applies)."""
        return min((b.max_cost_usd or 0.0) - b.spent - b.held for b in self.limits())

    def steps_left(self) -> int:
        return min(b.max_steps - b.steps for b in self.chain())

    def spend_note(self) -> str:
        """The status bar's budget reading: the run's spend against the cost limit."""
        limits = self.limits()
        if not limits:
            return ""
        run = limits[-1]
        return f"${run.spent:.4f} of ${run.max_cost_usd:g} spent"

    def check_steps(self) -> None:
        """Raise ``TurnEnded`` when a step limit (this budget's or one above) allows no request."""
        for budget in self.chain():
            if budget.steps >= budget.max_steps:
                whose = "" if budget is self else "the run's "
                raise TurnEnded("max_steps", f"{whose}step limit reached ({budget.max_steps})")

    def check(self) -> None:
        """Raise ``TurnEnded`` when a step limit allows no request, or a cost limit is spent."""
        self.check_steps()
        for budget in self.limits():
            limit = budget.max_cost_usd or 0.0
            if budget.spent > limit or budget.spent == limit > 0:  # a free model runs under $0
                raise TurnEnded("max_cost", f"cost limit reached (${budget.spent:.4f} of "
                                            f"${budget.max_cost_usd:g} this run)")  # fmt: skip

    def take_step(self) -> None:
        """Count one request about to be sent, or raise ``TurnEnded`` at a step limit."""
        self.check_steps()
        for budget in self.chain():
            budget.steps += 1

    def hold(self, input_usd: float, output_price: float, max_tokens: int) -> Hold:
        """Hold a request's estimated input cost and as much output (``output_price`` USD a
        token) as is left room for, at most ``max_tokens``; raise ``TurnEnded`` when the input
        and ``FLOOR_TOKENS`` of output (fewer if ``max_tokens`` is lower) do not fit."""
        room = self.room_usd()
        top = min(self.limits(), key=lambda b: (b.max_cost_usd or 0.0) - b.spent - b.held)
        spent = f"${top.spent:.4f} spent" + (
            f", ${top.held:.4f} held by requests on the way" if top.held else ""
        )
        if input_usd > room:
            raise TurnEnded("max_cost", f"the next request would cross the cost limit ({spent} + "
                                        f"an estimated ${input_usd:.4f} for its input > "
                                        f"${top.max_cost_usd:g}); it was not sent")  # fmt: skip
        tokens = max_tokens
        if output_price > 0:
            tokens = min(max_tokens, int((room - input_usd) / output_price))
        floor = min(FLOOR_TOKENS, max_tokens)
        if tokens < floor:
            raise TurnEnded("max_cost", f"the next request would cross the cost limit: after "
                                        f"{spent} and an estimated ${input_usd:.4f} for its "
                                        f"input, the ${top.max_cost_usd:g} limit leaves room for "
                                        f"{tokens:,} output tokens, fewer than the {floor:,} a "
                                        "reply is given at least; it was not sent")  # fmt: skip
        held = Hold(input_usd + tokens * output_price, tokens, capped=tokens < max_tokens)
        for budget in self.chain():
            budget.held += held.usd
        return held

    def release(self, held: Hold) -> None:
        for budget in self.chain():
            budget.held = max(0.0, budget.held - held.usd)

    def charge(self, usd: float) -> None:
        for budget in self.chain():
            budget.spent += usd


class TurnState:
    def __init__(self, state: dict[str, Any], config: AgentConfig | None = None) -> None:
        config = config or AgentConfig()
        self.budget = Budget(config.max_steps, config.max_cost_usd)
        self.number = int(state.get("turns", 0))  # turns begun in this session
        self.step_count = int(state.get("steps", 0))  # this session's requests (keys its rows)
        self.started = time.monotonic()
        self.usage = Usage()
        self.cost_before = 0.0  # spent by the processes that ran the session before this one
        self.unpriced = ""  # a model that answered this turn and has no known price
        # the last request's measured input: the most of the next one a prompt cache can serve
        self.prompt_tokens = int(state.get("prompt_tokens", 0))
        self.tainted = False  # external content is in the context this turn
        self.failing: tuple[str, str, str] | None = None  # tool, arguments, error of the last call
        self.failed_times = 0  # how many calls in a row failed just like it
        self.reply_cut = False  # the latest reply stopped at the output limit (or the window's end)
        self.files_modified: list[str] = list(state.get("files_modified", []))
        self.refusals: list[dict[str, Any]] = []
        self.memory_proposals: list[dict[str, Any]] = []

    @property
    def steps(self) -> int:
        """Model requests in the current turn, its sub-agents' and summaries' included."""
        return self.budget.steps

    @property
    def cost_usd(self) -> float:
        """Spent by this process, its sub-agents included (the cost limit counts it)."""
        return self.budget.spent

    def draw_from(self, parent: TurnState) -> None:
        """A sub-agent's turn: its requests and spend count against ``parent``'s limits too."""
        self.budget.parent = parent.budget

    def begin(self) -> None:
        self.number += 1
        self.budget.steps = 0
        self.started = time.monotonic()
        self.tainted = False
        self.failing, self.failed_times = None, 0

    def next_step(self) -> None:
        """Count a request of the session's about to be sent (raises at a step limit)."""
        self.budget.take_step()
        self.step_count += 1

    def add_usage(self, usage: Usage, cost: float, *, unpriced: str = "") -> None:
        self.usage = self.usage + usage
        self.budget.charge(cost)
        self.unpriced = self.unpriced or unpriced

    def absorb(self, child: TurnState) -> None:
        """A finished sub-agent's usage (its spend was charged to this budget as it went)."""
        self.usage = self.usage + child.usage
        self.unpriced = self.unpriced or child.unpriced

    def tool_ran(self, tool: str, args: dict[str, Any], error: str | None) -> None:
        """Count a call that failed as the one before it did; any other call starts over."""
        failure = None if error is None else (tool, canonical_json(args), error)
        if failure is not None and failure == self.failing:
            self.failed_times += 1
        else:
            self.failing, self.failed_times = failure, int(failure is not None)

    def modified(self, path: str) -> None:
        if path not in self.files_modified:
            self.files_modified.append(path)

    def check_limits(self, config: AgentConfig, model: str = "") -> None:
        """Raise ``TurnEnded`` when a step, time or cost limit is reached, when a cost limit
        cannot be kept because ``model`` (or one that answered) has no known price (its spend
        would count as 0 and the limit would never fire), or when the turn is stuck: the same
        call failed the same way ``STUCK_LIMIT`` times in a row."""
        if self.failing is not None and self.failed_times >= STUCK_LIMIT:
            tool, _, error = self.failing
            first = (error.splitlines() or ["no message"])[0][:200]
            raise TurnEnded("repeated_failure", f"stopped: {tool} failed the same way "
                                                f"{self.failed_times} times in a row ({first})")  # fmt: skip
        if config.max_seconds and time.monotonic() - self.started > config.max_seconds:
            raise TurnEnded("max_time", f"time limit reached ({config.max_seconds:g}s)")
        from agent.providers.pricing import price_for  # agent.providers imports this module

        unknown = self.unpriced or (model if model and price_for(model) is None else "")
        if self.budget.limited and unknown:
            raise TurnEnded(
                "max_cost",
                f"the cost limit cannot be enforced: no price is known for model {unknown!r} "
                "(drop the cost limit, --max-cost-usd, to run it)",
            )
        self.budget.check()

    def reserve(self, model: str, prompt_tokens: int, max_tokens: int) -> Hold | None:
        """Before a request of ``prompt_tokens`` input tokens: hold its estimated input cost and
        the output the cost limit leaves room for (``Hold.output_tokens``, the request's new
        max_tokens), or raise ``TurnEnded`` when that is less than a reply needs. Checking only
        after a reply let one large request on an expensive model overshoot the limit by any
        amount; capping only the input let its output do the same. None without a cost limit."""
        from agent.providers.pricing import input_cost_usd, price_for  # (see check_limits)

        if not self.budget.limited:
            return None
        price = price_for(model)
        per_token = price.output / 1_000_000 if price else 0.0
        return self.budget.hold(
            input_cost_usd(model, prompt_tokens, self.prompt_tokens), per_token, max_tokens
        )

    def release(self, held: Hold | None) -> None:
        if held is not None:
            self.budget.release(held)

    def saved(self) -> dict[str, Any]:
        """What goes back into the session's persisted state at the end of a turn."""
        return {
            "steps": self.step_count,
            "prompt_tokens": self.prompt_tokens,
            "turns": self.number,
            "files_modified": self.files_modified,
        }
