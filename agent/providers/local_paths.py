"""Which paths the embedded model may name, and when it must answer instead of calling a tool.

Left to write a path itself, a 135M model wrote ``/tmp/x/workspace_root/os/python/2.7/10.0/10.0/…``
until the output limit, or asked ``list_files`` for a file five times. So the grammar offers the
path arguments of the file tools as a choice among paths that exist: the ones the conversation
names (the goal, a listing's lines) first, then the shallowest of the workspace, within a bound.
A path outside that choice (a new file for ``write_file``, a name with a quote or a non-ASCII
character) is still written freely where the tool creates it, and nowhere else.

The same model, its call answered, asked for it again, word for word, until the step limit: a
call that repeats one already answered in this turn (with no edit or command in between) is not
run: the reply is generated again as an answer from what it has.
"""

from __future__ import annotations

import json
import os
import re
from collections import deque
from pathlib import Path
from typing import Any

from agent.types import Message

MAX_FILES = 400  # paths in the grammar's choice of files
MAX_DIRS = 150  # and of folders
_SKIPPED = frozenset({"node_modules", "__pycache__", "target", "venv", "dist", "build"})
_WORD = re.compile(r"[A-Za-z0-9_./-]+")
# printable ASCII but a quote and a backslash: the grammar converter quotes nothing else right
_SAFE = re.compile(r"[ !#-\[\]-~]+")
# tools whose path argument names what exists: (files allowed, folders allowed)
EXISTING = {
    "read_file": (True, False),
    "edit_file": (True, False),
    "list_files": (False, True),
    "grep": (True, True),
}
# calls after which the same call may rightly be made again (the files changed)
_CHANGES = frozenset({"edit_file", "write_file", "run_command", "call_tool", "skill"})


def choices(root: str, messages: list[Message]) -> tuple[list[str], list[str]]:
    """(files, folders) the model may name, workspace-relative: those the conversation names
    first, then a breadth-first walk of ``root`` (hidden and build folders skipped)."""
    if not root:
        return [], []
    base = Path(root)
    files: dict[str, None] = {}
    dirs: dict[str, None] = {".": None}
    prefix = root.rstrip("/") + "/"
    for word in _named(messages):
        rel = word[len(prefix) :] if word.startswith(prefix) else word
        while rel.startswith("./"):
            rel = rel[2:]
        rel = rel.rstrip("./")
        if not rel or rel.startswith("/") or ".." in rel.split("/") or not _SAFE.fullmatch(rel):
            continue
        target = base / rel
        if target.is_file() and len(files) < MAX_FILES:
            files.setdefault(rel)
        elif target.is_dir() and len(dirs) < MAX_DIRS:
            dirs.setdefault(rel)
    _walk(base, files, dirs)
    return list(files), list(dirs)


def _named(messages: list[Message]) -> list[str]:
    """Words that look like paths in the conversation's text, latest message first."""
    words: list[str] = []
    for msg in reversed(messages):
        for text in _texts(msg.get("content")):
            words.extend(w for w in _WORD.findall(text[:200_000]) if "/" in w or "." in w)
    return words[:5_000]


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for block in content or []:
        if block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            inner = block.get("content")
            out.extend(_texts(inner) if isinstance(inner, list) else [str(inner or "")])
    return out


def _walk(base: Path, files: dict[str, None], dirs: dict[str, None]) -> None:
    queue: deque[str] = deque([""])
    seen = 0
    while queue and (len(files) < MAX_FILES or len(dirs) < MAX_DIRS) and seen < 5_000:
        rel = queue.popleft()
        try:
            entries = sorted(os.scandir(base / rel), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            name = entry.name
            if name.startswith(".") or not _SAFE.fullmatch(name):
                continue
            path = f"{rel}/{name}" if rel else name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if name not in _SKIPPED and len(dirs) < MAX_DIRS:
                        dirs.setdefault(path)
                        queue.append(path)
                elif entry.is_file(follow_symlinks=False) and len(files) < MAX_FILES:
                    files.setdefault(path)
            except OSError:
                continue


def path_schemas(
    tool: str, schema: dict[str, Any], files: list[str], dirs: list[str]
) -> dict[str, Any]:
    """``schema`` with its ``path`` argument a choice of ``files``/``dirs`` (``$defs`` refs),
    for the tools in ``EXISTING``; unchanged for the others or when there is nothing to offer."""
    kinds = EXISTING.get(tool)
    props = schema.get("properties") if isinstance(schema, dict) else None
    if kinds is None or not isinstance(props, dict) or "path" not in props:
        return schema
    refs: list[dict[str, Any]] = [
        {"$ref": f"#/$defs/{name}"}
        for name, wanted, offered in (("files", kinds[0], files), ("dirs", kinds[1], dirs))
        if wanted and offered
    ]
    if not refs:
        return schema
    path: dict[str, Any] = refs[0] if len(refs) == 1 else {"anyOf": refs}
    return {**schema, "properties": {**props, "path": path}}


def repeats_reply(messages: list[Message], reply: str) -> bool:
    """Whether ``reply`` (the model's JSON) calls a tool the same way as a call already
    answered this turn (``repeats``)."""
    try:
        data = json.loads(reply)
    except ValueError:
        return False
    if not isinstance(data, dict) or "tool" not in data:
        return False
    return repeats(messages, str(data["tool"]), data.get("arguments"))


def repeats(messages: list[Message], name: str, args: Any) -> bool:
    """Whether the call ``name(args)`` was made already in this turn with nothing changed
    since (no edit, command or skill after it)."""
    key = (name, json.dumps(args, sort_keys=True))
    for msg in reversed(messages):
        content = msg.get("content")
        if msg.get("role") == "user" and _from_user(content):
            return False  # the turn began here
        if msg.get("role") != "assistant" or isinstance(content, str):
            continue
        for block in content or []:
            if block.get("type") != "tool_use":
                continue
            if (block.get("name"), json.dumps(block.get("input"), sort_keys=True)) == key:
                return True
            if block.get("name") in _CHANGES:
                return False
    return False


def _from_user(content: Any) -> bool:
    """A message the user wrote (text that is not one of Kiln's tagged blocks), not a turn of
    tool results."""
    if isinstance(content, str):
        return True
    for block in content or []:
        if block.get("type") == "tool_result":
            return False
    return any(
        block.get("type") == "text" and not str(block.get("text", "")).lstrip().startswith("<")
        for block in content or []
    )
