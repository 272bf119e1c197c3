"""Memory files a command must not create: read-only binds cannot cover a file that does not
exist yet, so the files a command created at these names are removed when it ends (the PID
namespace has ended every process it started by then, so nothing can race the check). Below the
root, the memory and shell-hook files a command created anywhere (``sub/AGENTS.md``,
``sub/.envrc``: ``agent.sandbox.nested_files``) are removed the same way."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from agent.sandbox import git_todo
from agent.sandbox.bwrap import PROTECTED_IN_WORKSPACE, submodule_config
from agent.sandbox.nested_files import NestedFiles
from agent.write_policy import AUTORUN_FILES, PIPELINE_PATHS, SHELL_HOOK_FILES

# At the workspace root: memory and settings loaded into every session, skill folders whose
# contents the next session would offer, direnv's auto-run file, and the files an editor or git
# acts on by itself (``AUTORUN_FILES``: editor settings and tasks, ``.git/commondir``), CI
# pipelines and commit hooks (``PIPELINE_PATHS``).
# ``.git/hooks`` where a repository has none (``git init --template=``, a clone without git's
# templates): its hooks run at the user's next commit. A ``.git`` at the root of a workspace that
# had none: its config (``core.fsmonitor``) runs at the user's next ``git status`` there, which a
# shell prompt or the editor's git view starts on its own, and a ``.git`` file may name a git
# folder the command prepared anywhere.
GUARDED = (
    "KILN.md", "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", *SHELL_HOOK_FILES, ".kiln/settings.json", ".kiln/mcp.json",
    ".kiln/skills", ".claude", ".agents", ".git", ".git/hooks", *AUTORUN_FILES, *PIPELINE_PATHS,
)  # fmt: skip


class MemoryGuard:
    def __init__(
        self,
        root: Path,
        extra: Iterable[str] = (),
        nested: NestedFiles | None = None,
        links: Iterable[Path] = (),
    ) -> None:
        self.root = Path(root)
        self.nested = nested
        pointers = [  # a submodule's git folder may not gain a pointer to another config
            p.relative_to(self.root).as_posix()
            for p in submodule_config(self.root)
            if p.name in ("commondir", "config.worktree")
        ]
        nested_git = nested.git_parts() if nested is not None else []  # ``sub/.git/commondir``
        names = (*GUARDED, *pointers, *extra, *nested_git)
        self.absent = [name for name in names if not _exists(self.root / name)]
        self.todo = git_todo.exec_lines(self.root)  # a rebase's exec lines (``git_todo``)
        self.links = _protected_links(self.root, nested.held() if nested is not None else ())
        self.watch(links)

    def watch(self, paths: Iterable[Path]) -> None:
        """Also put back those of ``paths`` that are links in the workspace: the paths a user's
        ``Write(...)`` deny rule names (the sandbox's read-only set), which a bind covers only
        where they lead, like the protected names."""
        rels = []
        for path in paths:
            for root in (self.root, self.root.resolve()):
                if root in Path(path).parents:
                    rels.append(Path(path).relative_to(root).as_posix())
                    break
        for name, target in _protected_links(self.root, rels, own=False).items():
            self.links.setdefault(name, target)

    def undo(self) -> list[str]:
        """Remove what the command created at guarded names; returns their names. This runs on
        the host: a link on the way to a name (``.kiln -> $KILN_HOME``, ``.vscode`` -> the user's
        editor settings) is never followed out of the workspace; the link itself is removed."""
        removed = []
        created = []
        if self.nested is not None:
            created = sorted(self.nested.refresh().held() - self.nested.held())
        for name in [*self.absent, *created]:
            path = self.root / name
            if not _exists(path):
                continue
            link = _first_link(self.root, name)
            target = path.resolve() if link is not None else path
            if link is not None and not _inside(self.root, target):
                link.unlink(missing_ok=True)
                removed.append(link.relative_to(self.root).as_posix())
                continue
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink(missing_ok=True)
            removed.append(name)
        return removed + self._relink() + git_todo.disarm(self.root, self.todo)

    def _relink(self) -> list[str]:
        """Put back the protected names that were links (``.git/hooks -> ../githooks``,
        ``CLAUDE.md -> AGENTS.md``): a bind cannot cover a link itself, only where it leads,
        so a command could replace the link with a folder of its own hooks or a file of its
        own instructions."""
        notes = []
        for name, target in self.links.items():
            path = self.root / name
            try:
                if os.readlink(path) == target:
                    continue
            except OSError:
                pass
            if _first_link(self.root, name) is not None:
                continue  # its folder is pinned; never follow a link out of the workspace
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            try:
                os.symlink(target, path)
            except OSError:
                continue
            notes.append(f"{name} (put back as the link to {target})")
        return notes


def _protected_links(root: Path, nested: Iterable[str] = (), own: bool = True) -> dict[str, str]:
    """The protected names (``.git``, ``PROTECTED_IN_WORKSPACE`` unless not ``own``, and the
    memory and shell-hook files held in subfolders, ``nested``) that are links, with what they
    name."""
    out = {}
    for name in (*((".git", *PROTECTED_IN_WORKSPACE) if own else ()), *sorted(nested)):
        path = root / name
        if path.is_symlink() and _first_link(root, name) is None:
            try:
                out[name] = os.readlink(path)
            except OSError:
                continue
    return out


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _first_link(root: Path, name: str) -> Path | None:
    """The first folder on the way from ``root`` to ``name`` that is a symlink, if any."""
    parts = Path(name).parts
    for i in range(1, len(parts)):
        here = root.joinpath(*parts[:i])
        if here.is_symlink():
            return here
    return None


def _inside(root: Path, path: Path) -> bool:
    root = root.resolve()
    return root in path.parents
