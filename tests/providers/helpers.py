"""Shared request builders for provider tests."""

from __future__ import annotations

from typing import Any

from agent.types import Request, ToolSpec, user_message

READ_FILE = ToolSpec(
    "read_file",
    "Read a file from the workspace.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
SEARCH_CODE = ToolSpec(
    "search_code",
    "Search the code index.",
    {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
)
DEFERRED = ToolSpec(
    "jira_create",
    "Create a Jira issue.",
    {"type": "object", "properties": {"title": {"type": "string"}}},
)


def make_request(*messages: dict[str, Any], deferred: list[ToolSpec] | None = None) -> Request:
    return Request(
        system="You are Kiln.",
        tools=[READ_FILE, SEARCH_CODE],
        messages=list(messages) or [user_message("hi")],
        deferred_tools=list(deferred or []),
    )


async def collect(stream: Any) -> list[Any]:
    return [item async for item in stream]


OPEN_MODELS: list[Any] = []


def track(model: Any) -> Any:
    """Remember a model so the autouse fixture closes its connections before the loop ends."""
    OPEN_MODELS.append(model)
    return model
