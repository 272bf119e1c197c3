"""The words a tool call is shown and answered with: its one-line title and the locations it
touches (live, and when a transcript is replayed), what the user approves in full, and the
error text the model reads when a call fails (kind, tool, arguments, message, suggestion)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

from agent.types import canonical_json
from kiln_errors.shown import cut, shown

MAX_SHOWN_ARGUMENTS = 20_000  # characters of a call's arguments shown for approval
MAX_SHOWN_VALUE = 200  # characters of one argument shown again when the call failed


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
    """The failed call's answer: its arguments as sent, each long text cut to its start and
    end (a path of thousands of characters is no help a second time), then why it failed."""
    shown = canonical_json(_short(args))[:500] if isinstance(args, dict) else repr(args)[:500]
    lines = [f"error: {kind}", f"tool: {cut(tool)}", f"arguments: {shown}", f"message: {message}"]
    if suggestion:
        lines.append(f"suggestion: {suggestion}")
    return "\n".join(lines)


def _short(value: Any) -> Any:
    if isinstance(value, str):
        return cut(value, MAX_SHOWN_VALUE)
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_short(v) for v in value]
    return value


# Errors of a call the input is to blame for (a name past 255 bytes, a link loop, no such file),
# with what the model can do instead; any other OSError may be a tool's bug.
_INPUT_ERRNOS = {
    errno.ENAMETOOLONG: "names hold at most 255 bytes and paths 4,096: use a shorter one",
    errno.ELOOP: "the path goes through a symbolic link loop: name the file another way",
    errno.ENOENT: "check the path with list_files",
    errno.ENOTDIR: "a name on the way is a file, not a folder: check the path with list_files",
    errno.EISDIR: "that is a folder: list it with list_files",
}


def input_fault(exc: BaseException, args: Any, root: Path) -> tuple[str, str] | None:
    """For an OSError the call's own input caused, its one-line message and a suggestion (the
    file it names, shortened, unless it is the ``path`` argument already shown); else None."""
    if not isinstance(exc, OSError) or exc.errno not in _INPUT_ERRNOS:
        return None
    message = exc.strerror or str(exc)
    name = exc.filename
    if isinstance(name, str | bytes):
        name = os.fsdecode(name)
        inside = name.removeprefix(f"{root}{os.sep}")
        given = args.get("path") if isinstance(args, dict) else None
        if inside != given and name != given:
            message += f": {shown(inside)}"
    return message, _INPUT_ERRNOS[exc.errno]
