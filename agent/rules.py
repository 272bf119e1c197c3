"""The permission rule vocabulary: one spelling per subject, Claude Code's spellings as aliases.

A rule is ``NAME`` or ``NAME(pattern)``. The name says what the pattern is matched against:

- command rules — ``run_command(...)``, alias ``Bash(...)``: a glob over ONE simple command of a
  parsed shell line (``pytest*``; Claude's prefix form ``npm run test:*`` means ``npm run test``
  or ``npm run test *``). Without a pattern: every command.
- write rules — ``write(...)``, aliases ``edit_file``, ``write_file``, ``Edit``, ``Write``,
  ``MultiEdit``, ``NotebookEdit``: a path glob checked for EVERY write — edit_file, write_file,
  remember (the memory file), any other tool given a ``path``, and every file a shell line writes
  through a redirection or ``tee``.
- read rules — ``read(...)``, aliases ``read_file``, ``Read``: a path glob checked for the tools
  that read files (read_file, list_files, grep).
- any other name is a tool name glob (``remember``, ``github__*``, ``skill``), optionally with
  a pattern over its ``path``/``name`` argument. Kiln names an MCP server's tools
  ``SERVER__tool``; Claude's spelling ``mcp__SERVER__tool`` matches them too, and ``mcp__SERVER``
  every tool of that server (only tools named ``NAMESPACE__tool``: ``mcp__*`` never covers a
  built-in tool).

Path globs are relative to the workspace root (``secrets/**``); ``//abs/**``
is absolute, ``~/x`` is under the home folder, a pattern starting with the workspace's own
absolute path is taken as written, and any other single leading ``/`` (Claude's "relative to the
project") is the workspace root.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.shell_wrappers import git_subcommand_form
from agent.workspace import on_disk

CLAUDE_MCP_PREFIX = "mcp__"  # Claude Code names MCP tools mcp__SERVER__tool; Kiln SERVER__tool

Kind = Literal["command", "write", "read", "tool"]

RULE_RE = re.compile(r"([\w\-\*\.]+)(?:\((.*)\))?", re.DOTALL)
COMMAND_NAMES = {"run_command", "bash", "shell"}
WRITE_NAMES = {"write", "edit_file", "write_file", "edit", "multiedit", "notebookedit"}
READ_NAMES = {"read", "read_file"}
# Tools that read the file their ``path`` names (``edit_file`` to find ``old_text``: its hint
# quotes the closest line, and found-or-not answers a guess), so read rules cover them.
READ_PATH_TOOLS = {"read_file", "list_files", "grep", "edit_file"}


@dataclass(frozen=True)
class Rule:
    text: str
    kind: Kind
    name: str  # the tool name glob for "tool" rules
    pattern: str | None

    def matches_command(self, words: tuple[str, ...], *, bare: bool = False) -> bool:
        """``bare`` (deny and ask rules): a trailing `` *`` also covers the command alone, as
        Claude Code reads it (``Bash(git push *)`` covers ``git push``)."""
        if self.kind != "command":
            return False
        if self.pattern is None:
            return True
        line = " ".join(words)
        pattern = self.pattern
        if pattern.endswith(":*"):  # Claude Code's prefix rule
            prefix = pattern[:-2]
            return line == prefix or line.startswith(prefix + " ")
        if bare and pattern.endswith(" *") and fnmatch.fnmatchcase(line, pattern[:-2]):
            return True
        return fnmatch.fnmatchcase(line, pattern)

    def matches_command_by_name(self, words: tuple[str, ...]) -> bool:
        """For deny and ask rules: also the command named without its path (``/usr/bin/curl``
        is ``curl``) and git without its global options (``git -C . push`` is ``git push``).
        Allow rules keep the exact spelling: ``./git`` is not the user's git."""
        forms = [words, git_subcommand_form(words)]  # `git -C . push` is `git push` too
        for form in filter(None, forms):
            if self.matches_command(form, bare=True):
                return True
            named = (form[0].rsplit("/", 1)[-1], *form[1:])
            if "/" in form[0] and self.matches_command(named, bare=True):
                return True
        return False

    def matches_path(self, kind: Kind, path: str, root: Path, *, fold: bool = False) -> bool:
        """``fold`` (deny and ask rules; an allow rule never widens that way): in any case too
        (on a case-insensitive filesystem ``SECRETS/key`` is ``secrets/key``), and a folder the
        rule names covers what is in it (``Read(secrets)`` covers ``secrets/key``, as the
        sandbox hides the whole folder)."""
        if self.kind != kind:
            return False
        if self.pattern is None:
            return True
        if not fold:
            return path_matches(self.pattern, path, root)
        absolute = Path(os.path.normpath(path if os.path.isabs(path) else root / path))
        for here in (absolute, *absolute.parents):
            if path_matches(self.pattern, str(here), root) or path_matches(
                self.pattern.casefold(), str(here).casefold(), root, folded=True
            ):
                return True
            if here == root:
                break
        return False

    def matches_tool(self, tool: str, subject: str) -> bool:
        if self.kind != "tool":
            return False
        names = [self.name]
        if self.name.startswith(CLAUDE_MCP_PREFIX) and "__" in tool:  # never a built-in tool
            server = self.name.removeprefix(CLAUDE_MCP_PREFIX)
            names.append(server)
            if "__" not in server and not any(c in server for c in "*?["):
                names.append(f"{server}__*")  # Claude Code's mcp__SERVER: every tool of SERVER
        if not any(fnmatch.fnmatchcase(tool, name) for name in names):
            return False
        return self.pattern is None or fnmatch.fnmatchcase(subject, self.pattern)


def parse_rule(text: str) -> Rule:
    """A rule from its text; ValueError with the reason when it is not one."""
    m = RULE_RE.fullmatch(text.strip())
    if not m:
        raise ValueError("a rule is NAME or NAME(pattern), e.g. run_command(make *)")
    name, pattern = m.group(1), m.group(2)
    if pattern is not None and not pattern.strip():
        raise ValueError("the pattern inside ( ) is empty")
    low = name.lower()
    if low in COMMAND_NAMES:
        return Rule(text, "command", "run_command", pattern)
    if low in WRITE_NAMES:
        return Rule(text, "write", "write", pattern)
    if low in READ_NAMES:
        return Rule(text, "read", "read", pattern)
    return Rule(text, "tool", name, pattern)


def path_matches(pattern: str, path: str, root: Path, *, folded: bool = False) -> bool:
    """Whether ``path`` (absolute, or relative to ``root``) matches a rule's path glob
    (``folded``: both were case-folded, so is the root they are compared under)."""
    if folded:
        root = Path(str(root).casefold())
    absolute = Path(path) if os.path.isabs(path) else root / path
    absolute = Path(os.path.normpath(absolute))
    candidate: str | None
    if pattern.startswith("//"):
        target, candidate = pattern[1:], absolute.as_posix()
    elif pattern.startswith("~/"):
        target, candidate = os.path.expanduser(pattern), absolute.as_posix()
    elif _under(Path(pattern.split("*")[0] or "."), root):
        target, candidate = pattern, absolute.as_posix()  # spelled with the workspace's path
    elif pattern.startswith("/"):
        target, candidate = pattern.lstrip("/"), _relative(absolute, root)
    else:
        target, candidate = pattern, _relative(absolute, root)
    if candidate is None:
        return False
    if fnmatch.fnmatchcase(candidate, target):
        return True
    # "dir/**" also covers the folder itself, and "**/x" covers x at the top.
    if target.endswith("/**") and candidate == target[:-3]:
        return True
    return target.startswith("**/") and fnmatch.fnmatchcase(candidate, target[3:])


def path_spellings(path: str, root: Path, *, shell: bool = False) -> list[str]:
    """The spellings of ``path`` a path rule is matched against: as given (``~`` expanded when a
    shell line wrote it) and where it lands, symlinks resolved. So a link inside the workspace
    (``docs/s -> ../secrets``) or a ``~/…`` spelling of a workspace path meets the rules of the
    file it reaches. Deny and ask rules match if any spelling does; allow rules need them all."""
    given = os.path.expanduser(path) if shell and path.startswith("~") else path
    absolute = Path(given) if os.path.isabs(given) else Path(root) / given
    listed_as = on_disk(absolute)
    if listed_as != absolute:  # a name the tools showed escaped: the rules see the real one too
        return [given, *path_spellings(str(listed_as), root)]
    try:
        landed = str(absolute.resolve(strict=False))
    except (OSError, RuntimeError):
        return [given]
    return [given] if landed == given else [given, landed]


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None
