"""File reading tools: read_file, list_files, grep. Paths stay inside the workspace, and what
they answer with is the repository's text, wrapped as external content (``agent.injection``);
the tools that change files, write_file and edit_file, are ``agent.tools.file_edits``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from agent.errors import PathOutsideWorkspace, ToolError
from agent.injection import external
from agent.protocols import ToolContext
from agent.tools.base import FunctionTool, schema
from agent.tools.pattern_size import MAX_UNITS, expanded_size
from agent.tree_walk import walk
from agent.types import ToolSpec
from kiln_errors.shown import listed, shown

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
            f"{shown(args['path'] or '.')} is a directory",
            suggestion="use list_files for directories",
        )
    text = session.read_text(path, args["path"])
    lines = text.splitlines()
    offset = max(int(args.get("offset", 1) or 1), 1)
    limit = int(args.get("limit", MAX_READ_LINES) or MAX_READ_LINES)
    chunk = lines[offset - 1 : offset - 1 + limit]
    width = len(str(offset + len(chunk)))
    numbered = "\n".join(f"{n:>{width}}\t{line}" for n, line in enumerate(chunk, start=offset))
    rel = session.workspace.relative(path)
    # Not ``rel``: a shipped link may lead to a name holding an instruction.
    asked = shown(args["path"])
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
    if not base.exists():
        raise ToolError(
            f"{shown(str(args.get('path')))} does not exist", suggestion="list its parent folder"
        )
    if not base.is_dir():
        raise ToolError(
            f"{shown(str(args.get('path')))} is not a directory",
            suggestion="use read_file for files",
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
            entries.append(listed((rel / name).as_posix()))
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


PER_LINE_ONLY = r"\(\?[=!<]|\\[AZzG]|\(\?[a-zA-Z]*-"  # compiled by ``regex`` where used
GREP_SECONDS = 10.0  # for one grep call: a backtracking pattern fails, it never hangs Kiln


async def grep(args: dict[str, Any], ctx: ToolContext) -> str:
    """Lines matching a regular expression. The pattern is the model's and the lines are the
    repository's, so text in a checkout can ask for a pattern that backtracks for hours on a
    line it holds (``(x|xx)+$`` on 40 x's and a ``!``): Python's ``re`` cannot be stopped, not
    even by SIGTERM, and a `kiln run --ci` hung until the job's timeout. ``regex`` (the same
    syntax) takes a timeout: past ``GREP_SECONDS`` the call ends with what it found. It is
    imported here, by the first grep (~15 ms a run without one need not pay)."""
    import regex

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
    if not base.exists():  # not "no matches": the model would take the text as searched
        raise ToolError(
            f"{shown(str(args.get('path')))} does not exist",
            suggestion="check the path with list_files",
        )
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
    lines_only = regex.search(PER_LINE_ONLY, args["pattern"])
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
            return _grep_stopped(args, hits, listed(ws.relative(file)))
        for n, line in enumerate(lines, start=1):
            try:
                found = pattern.search(line, timeout=_left(deadline))
            except TimeoutError:
                return _grep_stopped(args, hits, f"{listed(ws.relative(file))}:{n}")
            if found:
                hits.append(f"{listed(ws.relative(file))}:{n}: {line[:300]}")
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
]
