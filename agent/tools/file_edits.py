"""File edit tools: write_file and edit_file, each proposing the whole new text of one file.

The edit goes through the session (``propose_edit``): permission, the host's review or the
disk write, then an answer the model can act on (lines changed, deferred, stale, rejected). A
file is edited from the text the editor shows, kept in its line-end style, and refused when
it is not UTF-8 (writing the decoded text back would replace the bytes that did not decode).
The file reading tools are ``agent.tools.files``.
"""

from __future__ import annotations

import difflib
import time
from pathlib import Path
from typing import Any

from agent import line_ends
from agent.errors import ToolError
from agent.injection import external
from agent.protocols import ToolContext
from agent.tools.base import FunctionTool, schema
from agent.types import ToolSpec
from agent.workspace import read_regular


async def write_file(args: dict[str, Any], ctx: ToolContext) -> str:
    session = ctx.session
    path = session.workspace.resolve_write(args["path"])
    name = session.workspace.named(args["path"])  # src/a.py, however the model spelled it
    if path.is_dir():
        raise ToolError(f"{name} is a directory")
    old = _editable_text(ctx, path, name) if path.exists() else ""
    content = line_ends.like(old, args["content"])
    outcome = await session.propose_edit(path, old, content, call_id=ctx.call_id)
    return _edit_result(name, outcome, old, content)


def _editable_text(ctx: ToolContext, path: Path, name: str) -> str:
    """The text an edit starts from. A file that is not UTF-8 (Latin-1, Shift JIS) reads with
    U+FFFD for each byte that does not decode, and writing that text back would replace every
    such byte in the file: it is refused in one line, before anything is proposed."""
    text = ctx.session.read_text(path, name)
    if "\ufffd" not in text:
        return text
    try:
        read_regular(path, [ctx.session.workspace.root]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{name} is not UTF-8 text (byte "
            f"{exc.object[exc.start]:#04x} at offset {exc.start}); an edit would replace every "
            "byte that is not",
            suggestion="change it with a command (sed, iconv), or convert it to UTF-8 first",
        ) from None
    except OSError:
        pass  # read_text decided already: the editor's buffer, or the same answer as then
    return text


async def edit_file(args: dict[str, Any], ctx: ToolContext) -> str:
    session = ctx.session
    path = session.workspace.resolve_write(args["path"])
    name = session.workspace.named(args["path"])
    if not path.is_file():
        raise ToolError(f"{name} does not exist", suggestion="create it with write_file")
    old = _editable_text(ctx, path, name)
    old_text, new_text = args["old_text"], args["new_text"]
    if not old_text:
        raise ToolError(
            "old_text is empty", suggestion="give the exact text to replace, or use write_file"
        )
    count = old.count(old_text)
    if count == 0 and "\r\n" in old and "\n" in old_text and "\r" not in old_text:
        # Windows line ends: the model quotes the lines it read with \n; keep the file's \r\n.
        crlf = old_text.replace("\n", "\r\n")
        if crlf in old:
            old_text, new_text = crlf, new_text.replace("\r\n", "\n").replace("\n", "\r\n")
            count = old.count(old_text)
    if old_text.count("\n") == old_text.count("\r\n"):
        # Lines the edit adds to a Windows file get its \r\n too (old_text of one line); a
        # quoted run of bare \n lines in a mixed file keeps them.
        new_text = line_ends.like(old, new_text)
    if count == 0:
        near = _closest_line(
            old_text.strip().splitlines()[0] if old_text.strip() else old_text, old.splitlines()
        )
        source = f"file:{name}"  # the line is the file's text: data like the file
        hint = (
            f"closest line in the file: {external(source, repr(near[0]))}"
            if near
            else "read the file first and copy the text exactly"
        )
        raise ToolError(f"old_text not found in {name}", suggestion=hint)
    if count > 1:
        raise ToolError(
            f"old_text occurs {count} times in {name}",
            suggestion="include more surrounding lines so the text is unique",
        )
    new = old.replace(old_text, new_text, 1)
    outcome = await session.propose_edit(path, old, new, call_id=ctx.call_id)
    return _edit_result(name, outcome, old, new)


CLOSEST_SECONDS = 2.0  # for the closest-line hint of an edit_file that missed


def _closest_line(wanted: str, lines: list[str]) -> list[str]:
    """``difflib.get_close_matches(wanted, lines, n=1, cutoff=0.6)``, looking for at most
    ``CLOSEST_SECONDS``: a file can hold 64 MB of lines that all pass the quick filters (the
    same characters in another order), each then compared in full, minutes on the event loop."""
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(wanted)
    best: tuple[float, str] | None = None
    deadline = time.monotonic() + CLOSEST_SECONDS
    for n, line in enumerate(lines):
        if n % 64 == 0 and time.monotonic() > deadline:
            break
        matcher.set_seq1(line)
        if (
            matcher.real_quick_ratio() >= 0.6
            and matcher.quick_ratio() >= 0.6
            and (score := matcher.ratio()) >= 0.6
            and (best is None or (score, line) > best)
        ):
            best = (score, line)
    return [best[1]] if best else []


def _edit_result(rel: str, outcome: str, old: str, new: str) -> str:
    if outcome == "applied":
        added, removed = _changed_lines(old, new)
        return f"edited {rel} (+{added} -{removed} lines)"
    if outcome == "deferred":
        return f"edit to {rel} proposed; the user will review it later. Continue as if it may not be applied."
    if outcome == "stale":
        raise ToolError(
            f"{rel} changed while the edit was proposed",
            suggestion="read the file again and redo the edit",
        )
    raise ToolError(
        f"the user rejected the edit to {rel}",
        suggestion="ask what they want instead or try another approach",
    )


def _changed_lines(old: str, new: str) -> tuple[int, int]:
    """Lines added and removed, from a line diff only: ``difflib.ndiff`` also compares every
    changed old line with every changed new one (its intraline hints), so rewriting a file of
    500 similar lines held the answer, and the event loop, for minutes."""
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines())
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed


TOOLS = [
    FunctionTool(
        ToolSpec(
            "edit_file",
            "Replace one exact, unique occurrence of old_text with new_text in a file.\n"
            "Copy old_text exactly from read_file output (without the line-number prefix), "
            "including enough lines to be unique. Fails if the text is missing or ambiguous. "
            "Prefer it over write_file for changes to existing files.\n"
            'Example: {"path": "src/app.py", "old_text": "return a - b", "new_text": "return a + b"}',
            schema(
                {
                    "path": {"type": "string"},
                    "old_text": {"type": "string"},
                    "new_text": {"type": "string"},
                },
                ["path", "old_text", "new_text"],
            ),
        ),
        "edit",
        edit_file,
    ),
    FunctionTool(
        ToolSpec(
            "write_file",
            "Create a file, or replace a whole file, with the given content.\nUse it for new "
            "files; for changes to existing files use edit_file.\n"
            'Example: {"path": "tests/test_new.py", "content": "def test_x():\\n    assert True\\n"}',
            schema(
                {"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"]
            ),
        ),
        "edit",
        write_file,
    ),
]
