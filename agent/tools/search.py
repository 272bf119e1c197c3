"""search_code: ranked retrieval over the workspace's code index (the indexer leaf library)."""

from __future__ import annotations

import asyncio
from typing import Any

from agent.errors import ToolError
from agent.injection import external
from agent.protocols import ToolContext
from agent.tools.base import FunctionTool, schema
from agent.types import ToolSpec
from kiln_errors.shown import cut

DEFAULT_HITS = 30  # ranked blocks considered; the view decides how much of each is shown
BUDGET_TOKENS = 2000  # what one search may cost the context (bench/budget_recall.py)


async def search_code(args: dict[str, Any], ctx: ToolContext) -> str:
    from indexer.view import render

    query = args["query"].strip()
    if not query:
        raise ToolError("query is blank", suggestion="send words, an identifier or a path")
    limit = int(args.get("limit") or DEFAULT_HITS)
    index = ctx.session.code_index()
    hits = await asyncio.to_thread(index.search, query, limit)
    hits = [h for h in hits if not ctx.session.read_denied(h.path)]
    if not hits:
        raise ToolError(
            f"no results for {cut(query)!r}",
            suggestion="try other words, an identifier, or grep for a literal",
        )
    return external(f"search:{query}", render(hits, query, BUDGET_TOKENS))


TOOLS = [
    FunctionTool(
        ToolSpec(
            "search_code",
            "Ranked search over the code index (functions, classes, module preambles) by words, "
            "identifiers or paths. Use it first to locate where something is defined or handled; "
            "it sees unsaved editor buffers. Returns files in rank order: each path once, one "
            "line per hit (lines, kind, name, parameters), then the lines holding your words. "
            "Not for exact string matches (use grep).\n"
            'Example: {"query": "parse config file", "limit": 30}',
            schema(
                {
                    "query": {"type": "string", "minLength": 1},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                },
                ["query"],
            ),
        ),
        "search",
        search_code,
    ),
]
