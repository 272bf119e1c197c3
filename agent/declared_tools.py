"""Deferred tools a session has declared, kept across processes in the order and the bytes they
were first sent.

On Anthropic every deferred tool is declared in ``tools`` (``defer_loading``) and an earlier
``tool_search`` result loads it by ``tool_reference``. A resumed process rebuilds its catalog from
disk: a skill installed mid-session would sort before the tools declared earlier, a skill removed
or an MCP server that no longer starts would drop its declarations, and the earlier reference would
then have to fall back to text. Each rewrites bytes already sent, and the prompt cache misses
from there on. So the session stores the definitions it declared (``state["declared_tools"]``)
and a resumed one declares them again first, as they were; a tool whose source is gone stays
declared and answers a call with an error saying so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agent.tool_runner import DeferredAdapter, ToolRunner
from agent.types import ToolSpec
from skills_registry.errors import ToolCallError

STATE_KEY = "declared_tools"


class KeptTool:
    """A deferred tool declared before this process started: its definition as it was sent;
    the call goes to the live tool of that name, when its source still offers it."""

    kind = "other"
    passes_nul = True  # as DeferredAdapter: the arguments go on to the live tool as they are

    def __init__(self, spec: ToolSpec, resolve: Callable[[str], Any] | None) -> None:
        self.spec = spec
        self.resolve = resolve

    async def run(self, args: dict[str, Any], ctx: Any) -> Any:
        tool = self.resolve(self.spec.name) if self.resolve is not None else None
        if tool is None:
            raise ToolCallError(
                f"tool '{self.spec.name}' is no longer available: the skill or MCP server "
                "that provided it is gone",
                hint="use tool_search to find what is available now",
            )
        return await DeferredAdapter(tool).run(args, ctx)


def saved(runner: ToolRunner) -> list[str]:
    """The declared deferred tools, in declaration order, each as JSON text: the state is stored
    with sorted keys, and a schema's key order is part of the bytes sent."""
    return [json.dumps(spec.to_dict(), ensure_ascii=False) for spec in runner.deferred_specs()]


def restore(
    runner: ToolRunner, state: dict[str, Any], resolve: Callable[[str], Any] | None
) -> None:
    """Declare again, first and unchanged, the deferred tools a stored session had declared."""
    for text in state.get(STATE_KEY) or []:
        try:
            raw = json.loads(text)
            spec = ToolSpec(str(raw["name"]), str(raw["description"]), dict(raw["input_schema"]))
        except (KeyError, TypeError, ValueError):
            continue  # a hand-edited or foreign state entry: not declared again
        if spec.name not in runner.deferred and runner.find(spec.name) is None:
            runner.deferred[spec.name] = KeptTool(spec, resolve)
