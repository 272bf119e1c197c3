"""todo_write: the agent's own plan, shown to the user and echoed in the status bar."""

from __future__ import annotations

from typing import Any

from agent.protocols import ToolContext
from agent.tools.base import FunctionTool, schema
from agent.types import ToolSpec

STATUSES = ("pending", "in_progress", "completed")


async def todo_write(args: dict[str, Any], ctx: ToolContext) -> str:
    items = [
        {"id": str(i["id"]), "content": i["content"], "status": i["status"]} for i in args["items"]
    ]
    await ctx.session.set_todos(items)
    done = sum(1 for i in items if i["status"] == "completed")
    return f"todo list updated: {done}/{len(items)} completed"


TOOLS = [
    FunctionTool(
        ToolSpec(
            "todo_write",
            "Replace the task's TODO list (send the whole list each time). Use it for work with "
            "three or more steps: add items when you plan, mark one in_progress while you work "
            "on it, completed when verified. Skip it for one-step tasks.\n"
            'Example: {"items": [{"id": "1", "content": "reproduce the failing test", "status": "completed"}, '
            '{"id": "2", "content": "fix parse_date", "status": "in_progress"}]}',
            schema(
                {
                    "items": {
                        "type": "array",
                        "items": schema(
                            {
                                "id": {"type": ["string", "integer"]},
                                "content": {"type": "string", "minLength": 1},
                                "status": {"type": "string", "enum": list(STATUSES)},
                            },
                            ["id", "content", "status"],
                        ),
                    }
                },
                ["items"],
            ),
        ),
        "think",
        todo_write,
    ),
]
