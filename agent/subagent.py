"""The ``task`` tool's sub-agent: a read-only child session with its own context, in the same
workspace, store and index, whose requests and spend are the parent's (``agent.turn.Budget``).
Its answer reaches the parent wrapped as external content: the child read third-party text."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agent.config import AgentConfig
from agent.events import AgentEvent
from agent.hosts import DiskHost
from agent.injection import SUBAGENT_PREFIX, external
from agent.protocols import ToolSpecs
from agent.types import ToolSpec

MAX_STEPS = 15
MAX_ANSWER_CHARS = 4000


class FrozenSpecs:
    """The tool definitions of a session's requests as they stand now (``ToolSpecs``)."""

    def __init__(self, source: ToolSpecs) -> None:
        self._specs = source.specs()
        self._deferred = source.deferred_specs()

    def specs(self) -> list[ToolSpec]:
        return list(self._specs)

    def deferred_specs(self) -> list[ToolSpec]:
        return list(self._deferred)


def forwarding(parent: Any, call_id: str) -> Callable[[AgentEvent], Awaitable[None]]:
    """The child's events go to the parent's host, marked with the ``task`` call that started
    it; they keep the child's ``session_id`` (its steps and spend are its own). A front-end
    shows them or leaves them out (an editor shows the call's result only)."""

    async def forward(event: AgentEvent) -> None:
        event.parent_tool_call_id = call_id
        await parent.host.emit(event)

    return forward


async def run_subagent(parent: Any, description: str, call_id: str = "") -> str:
    """Run ``description`` in a child of ``parent`` (an ``agent.session.Session``; its class
    makes the child, so this module needs no import of it) and return its answer."""
    config = AgentConfig(
        mode="ask",
        max_steps=min(MAX_STEPS, parent.config.max_steps),
        max_tokens=parent.config.max_tokens,
        subagent=True,
        # what the parent hides from tool outputs (--ci: the environment's secrets, a checkout's
        # token in .git/config), the child hides too: its requests go to the same provider
        redact_env=parent.config.redact_env,
    )
    child = type(parent).create(
        parent.root,
        host=DiskHost(forwarding(parent, call_id)),
        config=config,
        model=parent.model,
        store=parent.store,
        index=parent.services.index,
    )
    child.state["parent"] = parent.id
    # The child spends the run's steps and money: what it sends and spends counts against the
    # parent's limits as it happens, so sub-agents running at once share what is left.
    child.turn.draw_from(parent.turn)
    # The child's requests declare the parent's tools, not only the read-only ones it may run
    # (a call of another is refused as unknown): they then begin with the bytes the parent's
    # requests begin with, and the provider's cache serves that prefix to the child too.
    child.context.tools = FrozenSpecs(parent.context.tools)
    reason = await child.prompt(
        f"{description}\n\nExplore read-only and answer in at most {MAX_STEPS} lines"
        " with paths and line numbers."
    )
    parent.turn.absorb(child.turn)
    header = f"{SUBAGENT_PREFIX}{child.id} ({child.turn.step_count} steps):"
    answer = child.transcript.final_text()
    if not answer:
        return f"{header}\n(the sub-agent stopped: {reason})"
    # The answer is a model's retelling of what it read (files, command output): third-party
    # text, wrapped as data like the text it retells, cut before the wrapper so it closes.
    return f"{header}\n{external(f'{SUBAGENT_PREFIX}{child.id}', answer[:MAX_ANSWER_CHARS])}"
