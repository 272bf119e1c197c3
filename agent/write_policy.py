"""Where a write lands, for every tool that writes and every shell redirection or ``tee``.

One classification serves edit_file, write_file, remember, tools that take a ``path`` and the
files a command line writes, so a path rule cannot be dodged by choosing another tool:

- ``device``: ``/dev/null``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/tty``, ``/dev/fd/N`` — no file
  (``/dev/fd/../cwd/x`` is not one: any other path under ``/dev`` or ``/proc`` is ``outside``;
  the file a command line opens N on is a write of its own, ``agent.shell_descriptors``);
- ``scratch``: the private temp folder commands get (``/tmp`` inside the sandbox);
- ``workspace``: an ordinary file under the root (symlinks resolved);
- ``sensitive``: memory, settings and files that make tools run code on their own (``.git/``,
  ``.kiln/``, ``.claude/``, ``.agents/``, ``KILN.md``/``AGENTS.md``/``CLAUDE.md``/
  ``CLAUDE.local.md`` at any level, ``.envrc`` and mise's config (``SHELL_HOOK_FILES``), the
  editor files in ``AUTORUN_FILES``, CI
  pipelines and commit hooks in ``PIPELINE_PATHS``) —
  edits need a yes, are refused in ``ci``;
- ``outside``: anywhere else — never approved by an allow rule, refused in ``ci``.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Where = Literal["device", "scratch", "workspace", "sensitive", "outside"]

DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero")
SCRATCH_ROOTS = ("/tmp",)
FD_DEVICE = re.compile(r"/(dev/fd|proc/self/fd)/[0-9]+")  # a descriptor, not a way into /proc
# Workspace files an editor or git acts on by itself when the user next opens the folder or runs
# git, outside any sandbox: VS Code and Zed settings and tasks (an interpreter, a language
# server's binary, a task run on folder open), Neovim/Vim's local config (``exrc``), git's
# pointer to another config (``commondir``; ``config.worktree`` once sparse checkout enabled it).
# Commands cannot write them either (``agent.sandbox``: read-only, or removed when created).
# Whole folders too, where any file may name a program the editor starts on open: JetBrains IDEs'
# ``.idea`` (the project interpreter in ``misc.xml``, run configurations and startup tasks in
# ``workspace.xml``) and Helix's ``.helix`` (``languages.toml``: each language server's command).
# And the MCP servers other agents in the editor start from the folder (VS Code, Cursor, Gemini CLI,
# Claude Code's ``.mcp.json``, whose servers start by the name the user approved once, Roo Code,
# Kiro, Amazon Q, Continue, opencode). And a dev container's config (``.devcontainer``, whole, and
# ``.devcontainer.json``): its ``initializeCommand`` runs on the host when the editor opens the
# folder in the container it offers to reopen it in.
AUTORUN_FILES = (
    ".vscode/settings.json", ".vscode/tasks.json", ".zed/settings.json", ".zed/tasks.json",
    ".nvim.lua", ".nvimrc", ".exrc", ".vimrc", "_vimrc", ".gvimrc", "_gvimrc", "_exrc",
    ".git/commondir", ".git/config.worktree", ".idea", ".helix",
    ".vscode/mcp.json", ".cursor/mcp.json", ".gemini/settings.json", ".mcp.json",
    ".roo/mcp.json", ".kiro/settings/mcp.json", ".amazonq/mcp.json", ".continue/mcpServers",
    "opencode.json", "opencode.jsonc", ".devcontainer", ".devcontainer.json",
)  # fmt: skip
# Files that run code once a change leaves the agent, each on an action the user takes to keep the
# change rather than to run it: a CI pipeline (with the repository's secrets, when the branch is
# pushed) and the hooks the user's next ``git commit`` runs on the host (pre-commit, husky,
# lefthook). Edits ask (refused in ``ci``); commands find them read-only, or removed when created.
PIPELINE_PATHS = (
    ".github/workflows", ".github/actions", ".gitlab-ci.yml", ".gitlab/ci", "azure-pipelines.yml",
    ".azure-pipelines", ".circleci", ".travis.yml", "Jenkinsfile", "bitbucket-pipelines.yml",
    ".buildkite", ".drone.yml", ".woodpecker.yml", ".woodpecker", ".gitea/workflows",
    ".forgejo/workflows", ".pre-commit-config.yaml", ".husky", "lefthook.yml", ".lefthook.yml",
    "lefthook-local.yml",
)  # fmt: skip
# Files a shell hook runs code from when the user's shell enters the folder (the next prompt, on
# the host): direnv's ``.envrc``, and mise's config (``[env] _.source``, ``[hooks]``), whose trust
# is for the file's path, not its content.
SHELL_HOOK_FILES = (
    ".envrc", "mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml", ".mise",
    ".config/mise.toml", ".config/mise",
)  # fmt: skip
SENSITIVE_GLOBS = (
    *PIPELINE_PATHS,
    *(f"{p}/*" for p in PIPELINE_PATHS),
    ".git",
    ".git/*",
    ".kiln",  # the folder itself: `cp -r evil .claude` makes it whole
    ".kiln/*",
    ".claude",
    ".claude/*",
    ".agents",
    ".agents/*",
    # A package's own (`pkg/.kiln/skills`): a session working in `pkg` offers its skills, and
    # Claude Code started there runs the hooks of `pkg/.claude/settings.json`.
    *(f"*/{p}{tail}" for p in (".kiln", ".claude", ".agents") for tail in ("", "/*")),
    "KILN.md",
    "*/KILN.md",
    "AGENTS.md",
    "*/AGENTS.md",
    "CLAUDE.md",
    "*/CLAUDE.md",
    "CLAUDE.local.md",
    "*/CLAUDE.local.md",
    *SHELL_HOOK_FILES,
    *(f"*/{p}" for p in SHELL_HOOK_FILES),
    *(f"{p}/*" for p in SHELL_HOOK_FILES),
    *(f"*/{p}/*" for p in SHELL_HOOK_FILES),
    *AUTORUN_FILES,
    *(f"{p}/*" for p in AUTORUN_FILES),
)


@dataclass(frozen=True)
class WriteTarget:
    given: str
    path: Path  # absolute, symlinks resolved
    where: Where

    @property
    def shown(self) -> str:
        return self.given


# Names at the root that a link may stand for another workspace file (``KILN.md ->
# docs/instructions.md``, ``.claude -> config/claude``, ``.claude/settings.json -> ../x.json``):
# that file, or each file a link inside such a folder names, is then the memory, settings or
# autorun file itself, to a command and to the file tools alike.
LINKED_SETTINGS = (
    "KILN.md", "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", ".kiln", ".claude", ".agents",
    *SHELL_HOOK_FILES, *PIPELINE_PATHS,
)  # fmt: skip
LINKED_HOST_RUN = (".git/config", ".git/hooks", ".git/info", *AUTORUN_FILES)
MAX_LINK_SCAN = 2000  # entries looked at inside the folders above


def linked_targets(root: Path) -> tuple[list[Path], list[Path]]:
    """(settings, host-run): the workspace files and folders that the names above reach through
    a link, themselves or inside them (bounded); never the workspace itself."""
    root = Path(root).resolve()
    budget = [MAX_LINK_SCAN]
    return _reached(root, LINKED_SETTINGS, budget), _reached(root, LINKED_HOST_RUN, budget)


def _reached(root: Path, names: Sequence[str], budget: list[int]) -> list[Path]:
    found: list[Path] = []

    def keep(path: Path) -> None:
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return
        if root in target.parents and target != Path(os.path.normpath(path)):
            found.append(target)

    for name in names:
        path = root / name
        keep(path)
        if not path.is_dir():
            continue
        for folder, dirs, files in os.walk(path, followlinks=False):
            for entry in (*dirs, *files):
                budget[0] -= 1
                if budget[0] < 0:
                    return found
                if os.path.islink(os.path.join(folder, entry)):
                    keep(Path(folder, entry))
    return found


def classify_writes(paths: Sequence[str], root: Path) -> list[WriteTarget]:
    """``classify_write`` of each path, the links looked for once (a pattern such as ``*.py``
    may name a thousand files)."""
    if not paths:
        return []
    linked = [p for ps in linked_targets(Path(root).resolve()) for p in ps]
    return [classify_write(p, root, linked) for p in paths]


def classify_write(given: str, root: Path, linked: Sequence[Path] | None = None) -> WriteTarget:
    """Where a write to ``given`` (absolute, ``~``-relative, or relative to ``root``) lands
    (``linked``: ``linked_targets`` of ``root``, when already found)."""
    root = Path(root).resolve()
    raw = os.path.expanduser(given) if given.startswith("~") else given
    if raw in DEVICES or FD_DEVICE.fullmatch(raw):
        return WriteTarget(given, Path(raw), "device")
    candidate = Path(raw) if os.path.isabs(raw) else root / raw
    if os.path.normpath(candidate).startswith(("/proc/", "/dev/")):
        # ``/dev/fd/../cwd/KILN.md`` is the workspace's KILN.md to the command, and Kiln's own
        # ``/proc/self`` here: a path through these links is never an ordinary write.
        return WriteTarget(given, candidate, "outside")
    try:
        resolved = candidate.resolve(strict=False)
    except (OSError, RuntimeError):
        return WriteTarget(given, candidate, "outside")
    if resolved == root or root in resolved.parents:
        rel = resolved.relative_to(root).as_posix()
        if linked is None:
            linked = [p for ps in linked_targets(root) for p in ps]
        if is_sensitive(rel) or _under(resolved, linked):
            return WriteTarget(given, resolved, "sensitive")
        return WriteTarget(given, resolved, "workspace")
    if any(resolved == Path(s) or Path(s) in resolved.parents for s in SCRATCH_ROOTS):
        return WriteTarget(given, resolved, "scratch")
    return WriteTarget(given, resolved, "outside")


HOST_RUN_REFUSAL = (
    "{path}: git or your editor acts on this file by itself, on your machine and outside the "
    "sandbox; Kiln's file tools never write it, in any mode"
)


def runs_on_host(given: str | Path, root: Path, folders: Sequence[Path] = ()) -> bool:
    """Whether a write to ``given`` lands in a file git or an editor acts on by itself: anything
    in a ``.git`` folder or ``.git`` file at any level (the repository's config and hooks, a
    nested repository's), ``AUTORUN_FILES``, or one of ``folders`` (the hooks folder
    ``core.hooksPath`` names, a git folder a ``.git`` file names). Both the path as written and
    where it lands with links resolved are checked."""
    root = Path(root).resolve()
    raw = Path(os.path.expanduser(str(given))) if str(given).startswith("~") else Path(given)
    candidate = raw if raw.is_absolute() else root / raw
    try:
        spellings = {Path(os.path.normpath(candidate)), candidate.resolve(strict=False)}
    except (OSError, RuntimeError):
        spellings = {Path(os.path.normpath(candidate))}
    linked = linked_targets(root)[1]  # ``.vscode/tasks.json -> ../conf/tasks.json``
    for path in spellings:
        if _under(path, [*folders, *linked]):
            return True
        if path != root and root not in path.parents:
            continue
        parts = [p.casefold() for p in path.relative_to(root).parts]
        joined = "/".join(parts)
        autorun = (f.casefold() for f in AUTORUN_FILES)  # `.continue/mcpServers`
        if ".git" in parts or any(joined == f or joined.startswith(f"{f}/") for f in autorun):
            return True
    return False


def _under(path: Path, folders: Sequence[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def is_sensitive(rel: str) -> bool:
    """In any case: on a case-insensitive filesystem (macOS, Windows) ``.CLAUDE/settings.json``
    is ``.claude/settings.json``, whose hooks Claude Code runs, and ``kiln.md`` is ``KILN.md``."""
    folded = rel.casefold()
    return any(fnmatch.fnmatchcase(folded, g.casefold()) for g in SENSITIVE_GLOBS)
