"""search_code: ranked retrieval over the workspace's code index (the indexer leaf library)."""

from __future__ import annotations

import asyncio
from typing import Any

from agent.errors import ToolError
from agent.protocols import ToolContext
from agent.tools.base import FunctionTool, external, schema
from agent.types import ToolSpec


async def search_code(args: dict[str, Any], ctx: ToolContext) -> str:
    query = args["query"].strip()
    limit = int(args.get("limit") or 8)
    index = ctx.session.code_index()
    hits = await asyncio.to_thread(index.search, query, limit)
    if not hits:
        raise ToolError(
            f"no results for {query!r}",
            suggestion="try other words, an identifier, or grep for a literal",
        )
    lines = []
    for hit in hits:
        snippet = "\n".join(f"    {line}" for line in (hit.text or "").splitlines()[:6])
        lines.append(
            f"{hit.path}:{hit.start_line}-{hit.end_line} {hit.kind} {hit.name} (score {hit.score:.3f})\n{snippet}"
        )
    return external(f"search:{query}", "\n".join(lines))


TOOLS = [
    FunctionTool(
        ToolSpec(
            "search_code",
            "Ranked search over the code index (functions, classes, module preambles) by words, "
            "identifiers or paths. Use it first to locate where something is defined or handled; "
            "it sees unsaved editor buffers. Returns path:start-end, kind, name and a snippet per "
            "hit. Not for exact string matches (use grep).\n"
            'Example: {"query": "parse config file", "limit": 8}',
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
