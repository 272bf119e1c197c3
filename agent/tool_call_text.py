"""The words a tool call is shown and answered with: its one-line title and the locations it
touches (live, and when a transcript is replayed), what the user approves in full, and the
error text the model reads when a call fails (kind, tool, arguments, message, suggestion)."""

from __future__ import annotations

import json
from typing import Any

from agent.types import canonical_json

MAX_SHOWN_ARGUMENTS = 20_000  # characters of a call's arguments shown for approval


def prompt_detail(name: str, args: dict[str, Any], check: Any) -> str:
    """What the user approves, in full: the command and its parsed parts, the memory text."""
    if name == "run_command":
        lines = [f"$ {args.get('command', '')}"]
        if check.parts:
            lines += ["runs:", check.parts]
        if check.network:
            lines.append("with network access")
        return "\n".join(lines)
    if name == "remember":
        return f"add to memory: {args.get('text', '')}"
    if args:  # an MCP or skill tool, any other: what it is called with (an edit shows its diff)
        shown = json.dumps(args, indent=2, ensure_ascii=False, sort_keys=True)
        cut = (
            f"\n… {len(shown) - MAX_SHOWN_ARGUMENTS} more characters"
            if len(shown) > MAX_SHOWN_ARGUMENTS
            else ""
        )
        return f"with arguments:\n{shown[:MAX_SHOWN_ARGUMENTS]}{cut}"
    return ""


def title(name: str, args: Any) -> str:
    """The title a tool call is shown with (live and when a transcript is replayed), whole: a
    front-end escapes it onto one line, then cuts it to its width."""
    if not isinstance(args, dict):
        return name
    for key in ("path", "command", "query", "pattern", "name", "description"):
        if key in args:
            return f"{name}: {args[key]}"
    return name


def locations(args: Any) -> list[dict[str, Any]]:
    if isinstance(args, dict) and isinstance(args.get("path"), str):
        return [{"path": args["path"], "line": args.get("offset")}]
    return []


def error_text(kind: str, tool: str, args: Any, message: str, suggestion: str) -> str:
    shown = canonical_json(args)[:500] if isinstance(args, dict) else repr(args)[:500]
    lines = [f"error: {kind}", f"tool: {tool}", f"arguments: {shown}", f"message: {message}"]
    if suggestion:
        lines.append(f"suggestion: {suggestion}")
    return "\n".join(lines)
