"""File tools: read_file, list_files, grep, write_file, edit_file. Paths stay inside the workspace."""

from __future__ import annotations

import difflib
import time
from pathlib import Path
from typing import Any

import regex

from agent import line_ends
from agent.errors import PathOutsideWorkspace, ToolError
from agent.injection import external
from agent.protocols import ToolContext
from agent.tools.base import FunctionTool, schema
from agent.tools.pattern_size import MAX_UNITS, expanded_size
from agent.tree_walk import walk
from agent.types import ToolSpec
from agent.workspace import read_regular

MAX_READ_LINES = 2000
SKIP_DIRS = {
    ".git",
    ".kiln",
    "node_modules",
    "__pycache__",
    ".venv",
    "venv",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
}


async def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    session = ctx.session
    path = session.workspace.resolve(args["path"], for_read=True)
    if path.is_dir():
        raise ToolError(
            f"{args['path']} is a directory", suggestion="use list_files for directories"
        )
    text = session.read_text(path, args["path"])
    lines = text.splitlines()
    offset = max(int(args.get("offset", 1) or 1), 1)
    limit = int(args.get("limit", MAX_READ_LINES) or MAX_READ_LINES)
    chunk = lines[offset - 1 : offset - 1 + limit]
    width = len(str(offset + len(chunk)))
    numbered = "\n".join(f"{n:>{width}}\t{line}" for n, line in enumerate(chunk, start=offset))
    rel = session.workspace.relative(path)
    asked = args["path"]  # not ``rel``: a shipped link may lead to a name holding an instruction
    more = ""
    if offset - 1 + limit < len(lines):
        more = (
            f"\n[{len(lines) - (offset - 1 + limit)} more lines: read with offset={offset + limit}]"
        )
    session.touch(path)
    if numbered:
        return external(f"file:{rel}", numbered + more)
    if lines:  # an offset past the end: the file has lines, just not there
        raise ToolError(
            f"{asked} has {len(lines)} lines; offset {offset} is past the end",
            suggestion=f"read with an offset from 1 to {len(lines)}",
        )
    return f"{asked} is empty"


async def list_files(args: dict[str, Any], ctx: ToolContext) -> str:
    ws = ctx.session.workspace
    base = ws.resolve(args.get("path") or ".")
    if not base.is_dir():
        raise ToolError(
            f"{args.get('path')} is not a directory", suggestion="use read_file for files"
        )
    entries: list[str] = []
    denied = ctx.session.read_denied
    deep = False
    for dirpath, dirnames, filenames in walk(base):
        rel = Path(dirpath).relative_to(ws.root)
        if _too_deep(base, dirpath, dirnames):
            deep = True
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIP_DIRS and not d.startswith(".") and not denied((rel / d).as_posix())
        )
        for name in sorted(filenames):
            if denied((rel / name).as_posix()):
                continue
            entries.append((rel / name).as_posix())
            if len(entries) >= 500:
                entries.append("[listing truncated at 500 entries: list a subdirectory]")
                return _listing(args, entries)
    ctx.session.touch(base)
    if deep:
        entries.append(f"[folders more than {MAX_WALK_DEPTH} levels down not listed]")
    return _listing(args, entries) if entries else "(empty directory)"


MAX_WALK_DEPTH = 64  # folders below this are not walked: each costs a resolve of its whole path


def _too_deep(base: Path, dirpath: str, dirnames: list[str]) -> bool:
    """Prune ``dirnames`` at ``MAX_WALK_DEPTH`` below ``base``; whether anything was pruned. A
    checkout may nest folders a thousand deep, and checking each against the read deny rules
    resolves its path, so the walk cost grew with the square of the depth (a minute at 1,100)."""
    if not dirnames or len(Path(dirpath).relative_to(base).parts) < MAX_WALK_DEPTH:
        return False
    dirnames.clear()
    return True


def _listing(args: dict[str, Any], entries: list[str]) -> str:
    """File names are the repository's text (a name may hold a newline and an instruction)."""
    return external(f"files:{args.get('path') or '.'}", "\n".join(entries))


PER_LINE_ONLY = regex.compile(r"\(\?[=!<]|\\[AZzG]|\(\?[a-zA-Z]*-")
GREP_SECONDS = 10.0  # for one grep call: a backtracking pattern fails, it never hangs Kiln


async def grep(args: dict[str, Any], ctx: ToolContext) -> str:
    """Lines matching a regular expression. The pattern is the model's and the lines are the
    repository's, so text in a checkout can ask for a pattern that backtracks for hours on a
    line it holds (``(x|xx)+$`` on 40 x's and a ``!``): Python's ``re`` cannot be stopped, not
    even by SIGTERM, and a `kiln run --ci` hung until the job's timeout. ``regex`` (the same
    syntax) takes a timeout: past ``GREP_SECONDS`` the call ends with what it found."""
    ws = ctx.session.workspace
    size = expanded_size(args["pattern"])
    if size > MAX_UNITS:  # regex expands counted repeats when it compiles: gigabytes
        raise ToolError(
            f"the pattern is too large once its counted repeats are written out ({size:,} "
            f"atoms; at most {MAX_UNITS:,})",
            suggestion="use + or * instead of large {n} counts",
        )
    try:
        pattern = regex.compile(args["pattern"])
    except (regex.error, ValueError, OverflowError) as exc:
        raise ToolError(
            f"invalid regular expression: {exc}", suggestion="escape special characters"
        ) from None
    base = ws.resolve(args.get("path") or ".", for_read=True)
    files = [base] if base.is_file() else []
    deep = False
    if base.is_dir():
        for dirpath, dirnames, filenames in walk(base):
            deep = _too_deep(base, dirpath, dirnames) or deep
            dirnames[:] = sorted(
                d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")
            )
            files.extend(Path(dirpath) / f for f in sorted(filenames))
    hits: list[str] = []
    deadline = time.monotonic() + GREP_SECONDS
    # A line's match is a match in the whole file too, unless the pattern looks around or
    # anchors at the text's ends (a line's end is the file's next newline then).
    lines_only = PER_LINE_ONLY.search(args["pattern"])
    whole = None if lines_only else regex.compile(args["pattern"], regex.MULTILINE)
    for file in files:
        try:  # a link the checkout ships (notes.txt -> ~/.ssh/id_rsa) is refused as in read_file
            ws.resolve(file, for_read=True)
        except (PathOutsideWorkspace, ToolError):
            continue
        if ctx.session.read_denied(ws.relative(file)):
            continue  # a read deny rule hides it from every search, not only from read_file
        try:
            text = ctx.session.read_text(file)
        except ToolError:
            continue
        lines = text.splitlines()
        try:  # one search of the whole file first: most files hold no match
            if whole is not None and not whole.search("\n".join(lines), timeout=_left(deadline)):
                continue
        except TimeoutError:
            return _grep_stopped(args, hits, ws.relative(file))
        for n, line in enumerate(lines, start=1):
            try:
                found = pattern.search(line, timeout=_left(deadline))
            except TimeoutError:
                return _grep_stopped(args, hits, f"{ws.relative(file)}:{n}")
            if found:
                hits.append(f"{ws.relative(file)}:{n}: {line[:300]}")
                if len(hits) >= 200:
                    hits.append("[more than 200 matches: narrow the pattern or the path]")
                    return external(f"grep:{args['pattern']}", "\n".join(hits))
    if deep:
        hits.append(f"[folders more than {MAX_WALK_DEPTH} levels down not searched]")
    return external(f"grep:{args['pattern']}", "\n".join(hits)) if hits else "no matches"


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.001)


def _grep_stopped(args: dict[str, Any], hits: list[str], where: str) -> str:
    """The answer of a grep that ran out of time: what it found, or an error. ``where`` names
    a file of the repository (a name may hold a newline and an instruction): in the error it
    is wrapped, as the hits are."""
    why = f"grep stopped after {GREP_SECONDS:g}s at {where}"
    hint = "the pattern backtracks: avoid nested repetition such as (a+)+ or (a|aa)*"
    if not hits:
        wrapped = external(f"grep:{args['pattern']}", where)
        raise ToolError(f"grep stopped after {GREP_SECONDS:g}s at {wrapped}", suggestion=hint)
    return external(f"grep:{args['pattern']}", "\n".join([*hits, f"[{why}: {hint}]"]))


async def write_file(args: dict[str, Any], ctx: ToolContext) -> str:
    session = ctx.session
    path = session.workspace.resolve_write(args["path"])
    if path.is_dir():
        raise ToolError(f"{args['path']} is a directory")
    old = _editable_text(ctx, path, args["path"]) if path.exists() else ""
    content = line_ends.like(old, args["content"])
    outcome = await session.propose_edit(path, old, content, call_id=ctx.call_id)
    return _edit_result(args["path"], outcome, old, content)


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
    if not path.is_file():
        raise ToolError(f"{args['path']} does not exist", suggestion="create it with write_file")
    old = _editable_text(ctx, path, args["path"])
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
        source = f"file:{args['path']}"  # the line is the file's text: data like the file
        hint = (
            f"closest line in the file: {external(source, repr(near[0]))}"
            if near
            else "read the file first and copy the text exactly"
        )
        raise ToolError(f"old_text not found in {args['path']}", suggestion=hint)
    if count > 1:
        raise ToolError(
            f"old_text occurs {count} times in {args['path']}",
            suggestion="include more surrounding lines so the text is unique",
        )
    new = old.replace(old_text, new_text, 1)
    outcome = await session.propose_edit(path, old, new, call_id=ctx.call_id)
    return _edit_result(args["path"], outcome, old, new)


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
            "read_file",
            "Read a text file from the workspace, with line numbers.\n"
            "Use it before editing a file, to see exact text, or to follow a search hit. Open "
            "documents are read with their unsaved changes. For large files pass offset (1-based "
            "line) and limit (lines). Not for directories (use list_files) or for finding code "
            '(use search_code or grep).\nExample: {"path": "src/app.py", "offset": 120, "limit": 80}',
            schema(
                {
                    "path": {"type": "string"},
                    "offset": {"type": "integer", "minimum": 1},
                    "limit": {"type": "integer", "minimum": 1},
                },
                ["path"],
            ),
        ),
        "read",
        read_file,
    ),
    FunctionTool(
        ToolSpec(
            "list_files",
            "List files under a workspace directory (recursive, hidden and build folders skipped, "
            "at most 500 entries).\nUse it to get oriented in an unfamiliar tree. Not for finding "
            'code by meaning (use search_code).\nExample: {"path": "src"}',
            schema({"path": {"type": "string"}}, []),
        ),
        "read",
        list_files,
    ),
    FunctionTool(
        ToolSpec(
            "grep",
            "Find lines matching a regular expression (Python syntax) in a file or directory. "
            "Use it for exact names, error messages and literals. At most 200 matches.\n"
            'Example: {"pattern": "def load_config", "path": "src"}',
            schema(
                {"pattern": {"type": "string", "minLength": 1}, "path": {"type": "string"}},
                ["pattern"],
            ),
        ),
        "search",
        grep,
    ),
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
