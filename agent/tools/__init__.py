"""Built-in tools, registered explicitly in one fixed order (the order is part of the prefix)."""

from __future__ import annotations

from agent.protocols import Tool
from agent.tools import file_edits, files, meta, planning, search, shell

BUILTIN_ORDER = (
    "read_file", "list_files", "search_code", "grep", "edit_file", "write_file",
    "run_command", "todo_write", "skill", "tool_search", "call_tool", "remember", "task", "search_sessions",
)  # fmt: skip

READ_ONLY = ("read_file", "list_files", "search_code", "grep")


def builtin_tools(extra: list[Tool] | None = None) -> list[Tool]:
    """The built-ins in contract order; ``extra`` supplies tools built elsewhere (skill, tool_search)."""
    pool: dict[str, Tool] = {}
    for module in (files, file_edits, search, shell, planning, meta):
        for tool in module.TOOLS:
            pool[tool.spec.name] = tool
    for tool in extra or []:
        pool[tool.spec.name] = tool
    return [pool[name] for name in BUILTIN_ORDER if name in pool]
