"""Reading one memory file with its ``@path`` imports, bounded, from where it may read.

Memory is sent to the model provider at the start of every session, before the user does
anything, so whatever a memory file or an import reaches leaves the machine unasked. A
repository's memory file (and what it imports) must therefore resolve inside the repository; from
the user's agent folders (``KILN_HOME``, ``~/.claude``, ``~/.codex``, ``~/.agents``) it may import
Markdown files only, never ``auth.json``, ``.credentials.json`` or session logs. The user's own
memory files may import any file in those folders. Only regular files are read (a FIFO would
block forever, ``/dev/zero`` never ends), each at most ``READ_LIMIT`` bytes, at most
``MAX_IMPORTS`` per block (ten files importing the next level ten times would be 10^5 reads).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent.status import one_line
from agent.workspace import opened_path

MAX_DEPTH = 5
MAX_BYTES = 40_000  # a block's text, imports expanded
READ_LIMIT = MAX_BYTES + 1  # bytes read from any one file
MAX_IMPORTS = 64  # files imported into one block
IMPORT_RE = re.compile(r"^\s*@(\S+)\s*$")
INLINE_RE = re.compile(r"(?:^|(?<=\s))@(\S+)")  # an import inside a sentence
CODE_SPAN_RE = re.compile(r"(`+).*?\1")
# A fenced code block (CommonMark: ``` or ~~~, up to three spaces in): its ``@`` lines are code
# (``@types/node``, ``@dataclass``), not imports, as in Claude Code.
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
DENIED = "a read deny rule of your settings covers it"
GIT_FOLDER = "memory never reads a git folder"
ROOTS_NOTE = "the repository, and Markdown files in KILN_HOME, ~/.claude, ~/.codex, ~/.agents"


@dataclass(frozen=True)
class Scope:
    """Where a memory file and its imports may resolve: any file under ``anything``, Markdown
    files only under ``markdown``."""

    anything: tuple[Path, ...]
    markdown: tuple[Path, ...] = ()
    shown: str = ROOTS_NOTE
    # Folders only the user writes (their agent folders): a file named inside one counts as
    # there even when it is a link elsewhere (a dotfiles repository's, made by GNU stow).
    linked: tuple[Path, ...] = ()
    # The user's read deny rules (``Permissions.read_denied``): memory reads nothing they cover.
    denied: Callable[[str], bool] | None = field(default=None, compare=False)

    def refuses(self, *paths: Path) -> bool:
        return self.denied is not None and any(self.denied(str(p)) for p in paths)

    def trusts_link(self, named: Path) -> bool:
        return any(named.is_relative_to(r) for r in self.linked)

    def admits(self, target: Path) -> bool:
        if any(target.is_relative_to(r) for r in self.anything):
            return True
        markdown = target.suffix.lower() in (".md", ".markdown")
        return markdown and any(target.is_relative_to(r) for r in self.markdown)


@dataclass
class _Budget:
    imports: int = MAX_IMPORTS
    seen: set[Path] = field(default_factory=set)
    files: list[Path] = field(default_factory=list)  # imports read or looked for


def read_bounded(path: Path, scope: Scope | None = None) -> str:
    """At most ``READ_LIMIT`` bytes of a regular file (OSError for anything else). With
    ``scope``, the file opened must still be one it admits: ``path`` was checked before, and a
    process running meanwhile (an approved MCP server) may have turned a folder on the way into a
    link to ``~/.ssh`` since."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        opened = opened_path(fd) if scope is not None else None
        if (
            opened is not None
            and scope is not None
            and (not scope.admits(opened) or scope.refuses(opened) or in_git_folder(opened))
        ):
            raise OSError(0, "it led elsewhere when opened (a folder on the way became a link?)")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(READ_LIMIT)
    finally:
        os.close(fd)
    return decode_text(data)


def decode_text(data: bytes) -> str:
    """A memory file's text as editors save it: UTF-8 (a byte-order mark dropped, or it would
    hide an ``@import`` on the first line) or, after its byte-order mark, UTF-16 (PowerShell's
    ``>``, older Notepad)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def refusal(path: Path, scope: Scope | None) -> str | None:
    """Why the memory file ``path`` itself is not read, or None."""
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return f"[memory note: {path.name} skipped: cannot resolve it]"
    if scope is not None and not scope.admits(resolved):
        return (
            f"[memory note: {path.name} skipped: it resolves outside the repository ({resolved})]"
        )
    if scope is not None and scope.refuses(path, resolved):
        return f"[memory note: {path.name} skipped: {DENIED}]"
    if in_git_folder(resolved):
        return f"[memory note: {path.name} skipped: {GIT_FOLDER}]"
    return None


def in_git_folder(path: Path) -> bool:
    """Inside a git folder: its config holds the token a CI checkout leaves (and the tools
    keep from the model), its objects the repository's whole history. In any case: on a
    case-insensitive filesystem (macOS) ``.GIT/config`` is ``.git/config``. A git folder under
    another name (``git init --separate-git-dir .repo``, a bare mirror in the tree) is known by
    what git itself looks for: ``HEAD``, ``objects/`` and ``refs/``."""
    if any(part.casefold() == ".git" for part in path.parts):
        return True
    folder = Path(os.path.abspath(path))
    return any(_looks_like_git(d) for d in (folder, *folder.parents))


def _looks_like_git(folder: Path) -> bool:
    try:
        return (
            (folder / "HEAD").is_file()
            and (folder / "objects").is_dir()
            and (folder / "refs").is_dir()
        )
    except OSError:
        return False


def expand(
    path: Path, scope: Scope | None, *, users_own: bool = False, imports: list[Path] | None = None
) -> str:
    """The file's text with ``@path`` lines replaced by the imported files' text. The user's own
    memory files (``users_own``) may themselves be links to anywhere; imports stay in scope.
    ``imports`` receives each file imported, or looked for and not found: the text changes when
    one of them does."""
    stopped = None if users_own else refusal(path, scope)
    if stopped is not None:
        return stopped
    # The user's file imports relative to where they keep it, a link included.
    start = Path(os.path.abspath(path)) if users_own else path.resolve()
    budget = _Budget()
    text = _expand(start, 0, frozenset(), scope, budget, trusted=users_own)
    if imports is not None:
        imports.extend(budget.files)
    return text


def _expand(
    path: Path,
    depth: int,
    chain: frozenset[Path],
    scope: Scope | None,
    b: _Budget,
    *,
    trusted: bool = False,
) -> str:
    """``trusted``: ``path`` is the user's own file or a link in a folder only the user writes,
    which may lead anywhere; any other file must still be in ``scope`` once opened."""
    try:
        text = read_bounded(path, None if trusted else scope)
    except OSError as exc:
        return f"[memory note: cannot read {path}: {exc.strerror}]"
    out: list[str] = []
    size = 0
    fence = ""
    for line in text.splitlines():
        opening = FENCE_RE.match(line)
        if opening and (not fence or opening.group(1).startswith(fence)):
            fence = "" if fence else opening.group(1)
        m = None if fence or opening else IMPORT_RE.match(line)
        if not m:
            out.append(line)
            size += len(line) + 1
            for raw in [] if fence or opening else _inline_imports(line, path.parent):
                out.append(_import(raw, path, depth, chain, scope, b))
                size += len(out[-1]) + 1
            continue
        out.append(_import(m.group(1), path, depth, chain, scope, b))
        size += len(out[-1]) + 1
        if size > MAX_BYTES:
            break  # the block is cut at MAX_BYTES anyway
    return "\n".join(out)


def _import(
    raw: str,
    path: Path,
    depth: int,
    chain: frozenset[Path],
    scope: Scope | None,
    b: _Budget,
) -> str:
    """The text ``@raw`` in ``path`` stands for: the imported file expanded, or a note."""
    named = Path(os.path.expanduser(raw))
    named = Path(os.path.normpath(named if named.is_absolute() else path.parent / named))
    try:
        target = named.resolve()
    except (OSError, RuntimeError):
        return f"[memory note: @{raw} not found]"
    linked = scope is not None and not scope.admits(target) and scope.trusts_link(named)
    if target in chain or target == path.resolve():
        return f"[memory note: import cycle at @{raw} skipped]"
    if depth + 1 > MAX_DEPTH:
        return f"[memory note: @{raw} skipped: imports nest deeper than {MAX_DEPTH}]"
    if scope is not None and not (linked or scope.admits(target)):
        return (
            f"[memory note: @{raw} skipped: outside the folders memory may import from "
            f"({scope.shown})]"
        )
    if scope is not None and scope.refuses(named, target):
        return f"[memory note: @{raw} skipped: {DENIED}]"
    if in_git_folder(named) or in_git_folder(target):
        return f"[memory note: @{raw} skipped: {GIT_FOLDER}]"
    if not target.exists():
        b.files.append(target)  # created later, it is sent then
        return f"[memory note: @{raw} not found]"
    if not target.is_file() or target.is_relative_to("/proc"):
        return f"[memory note: @{raw} skipped: not a regular file]"
    if b.imports <= 0:
        return f"[memory note: @{raw} skipped: more than {MAX_IMPORTS} imports]"
    b.imports -= 1
    b.files.append(named if linked else target)
    here = path.resolve()
    return _expand(named if linked else target, depth + 1, chain | {here}, scope, b, trusted=linked)


def _inline_imports(line: str, folder: Path) -> list[str]:
    """``@path`` words inside a sentence ("See @README.md for an overview"), as Claude Code reads
    them: only words that name an existing file (``@kiln``, ``@someone`` and e-mail addresses
    stay text) and none inside a code span; a sentence's closing punctuation is not the path's."""
    found = []
    for word in INLINE_RE.findall(CODE_SPAN_RE.sub("", line)):
        for raw in (word, word.rstrip(".,;:!?)]'\"")):
            named = Path(os.path.expanduser(raw))
            if raw and (named if named.is_absolute() else folder / named).is_file():
                found.append(raw)
                break
    return found


def opening(level: str, path: Path) -> str:
    """A memory block's first line: the path (a folder name may hold a new line) on it, unquoted."""
    source = one_line(str(path), 4096).replace('"', "'")
    return f'<memory level="{level}" source="{source}">'
