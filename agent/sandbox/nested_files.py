"""Memory and shell-hook files below the workspace root (``sub/AGENTS.md``, ``sub/.envrc``), a
package's agent folders (``sub/.kiln``, ``sub/.claude``, ``sub/.agents``: its skills), and
nested repositories' git folders (``sub/.git``): a later session loads memory and a package's
skills as the project's instructions once it works there, direnv or mise runs a shell hook when
the user's shell enters the folder, and git runs what a nested repository's config names (``core.fsmonitor``)
when the user's shell prompt or the editor's git view looks at it. The permission check
sees the writes a command line names; a program writes what it likes (``python -c``, ``awk``,
``git checkout REF -- sub/AGENTS.md``). So the sandbox holds them too: those that exist when a
command starts are read-only to it (of a git folder: its config, hooks, ``info`` and
``commondir``), and one it creates is removed when it ends (``agent.sandbox.guard``).

They are found by a walk that enters no link and no ``.git`` folder and stops after
``MAX_FOLDERS`` folders: a path beyond is protected by the permission check only. A later look
lists again only the folders whose change time moved (an entry was created, removed or renamed
in it; no command can set a change time back) or that are new, so it costs a stat per folder.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from agent.sandbox.bwrap import MODULE_PROTECTED
from agent.write_policy import SHELL_HOOK_FILES

# ``.kiln``, ``.claude``, ``.agents``: a package's skill folders, which a session working there
# offers, and Claude Code's settings there, whose hooks run on the host.
NAMES = frozenset((
    "KILN.md", "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", ".git", ".kiln", ".claude", ".agents",
    *SHELL_HOOK_FILES,
))  # fmt: skip  # ``.config/mise.toml`` is matched on its last two names
MAX_FOLDERS = 10_000
# Files bound read-only at most: each is a mount (with the folders above it), and a checkout
# shipping an AGENTS.md in each of 10,000 folders would make every command line too long to start.
# Bubblewrap's start-up grows faster than the mounts: 100 files cost 0.1 s a command, 500 cost 1.3 s.
MAX_BOUND = 100
# A folder changed this close to the look before (in the same tick of a coarse filesystem
# clock) is listed again, whatever its change time says.
CLOCK_SLACK_NS = 200_000_000


@dataclass(frozen=True)
class Listing:
    inode: int
    ctime_ns: int
    folders: tuple[str, ...]  # names of sub-folders to enter
    held: tuple[str, ...]  # names of held files and folders in it


@dataclass
class NestedFiles:
    """What the last look found: each folder's listing, keyed by its path under the root."""

    root: Path
    listings: dict[str, Listing] = field(default_factory=dict)
    taken_ns: int = 0

    @classmethod
    def take(cls, root: Path) -> NestedFiles:
        return cls(Path(root)).refresh()

    def paths(self) -> list[Path]:
        """The held files below the root (not at it: those are protected by name), the
        shallowest ``MAX_BOUND`` of them."""
        held = sorted(self.held(), key=lambda rel: (rel.count("/"), rel))
        out: list[Path] = []
        for path in (self.root / rel for rel in held[:MAX_BOUND]):
            git_folder = path.name == ".git" and path.is_dir() and not path.is_symlink()
            if git_folder:
                out += [path / name for name in MODULE_PROTECTED]
            elif path.is_symlink():  # ``sub/AGENTS.md -> notes.md``: notes.md is the memory file
                target = path.resolve()
                out += [target] if self.root.resolve() in target.parents else []
            else:
                out.append(path)
        return out

    def held(self) -> set[str]:
        return {
            f"{folder}/{name}" for folder, listing in self.listings.items() if folder
            for name in listing.held
        }  # fmt: skip

    def git_parts(self) -> list[str]:
        """What of each nested git folder makes git run a program, existing or not (a
        ``commondir`` the folder did not have names another git folder's config and hooks)."""
        return [
            f"{rel}/{name}" for rel in sorted(self.held()) if rel.rsplit("/", 1)[-1] == ".git"
            and (self.root / rel).is_dir() and not (self.root / rel).is_symlink()
            for name in MODULE_PROTECTED
        ]  # fmt: skip

    def refresh(self) -> NestedFiles:
        """A new look, listing again only what changed since this one."""
        now = NestedFiles(self.root, taken_ns=time.time_ns())
        todo = deque([""])  # breadth first: past the bound, the deepest folders are left out
        while todo and len(now.listings) < MAX_FOLDERS:
            rel = todo.popleft()
            listing = self._listing(rel)
            if listing is None:
                continue
            now.listings[rel] = listing
            todo += [f"{rel}/{name}" if rel else name for name in listing.folders]
        return now

    def _listing(self, rel: str) -> Listing | None:
        path = self.root / rel if rel else self.root
        try:
            st = os.lstat(path)
        except OSError:
            return None
        old = self.listings.get(rel)
        if (
            old is not None
            and old.inode == st.st_ino
            and old.ctime_ns == st.st_ctime_ns
            and st.st_ctime_ns < self.taken_ns - CLOCK_SLACK_NS
        ):
            return old
        folders, held = [], []
        parent = Path(rel).name
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    is_held = entry.name in NAMES or f"{parent}/{entry.name}" in NAMES
                    if is_held:
                        held.append(entry.name)
                    try:
                        is_folder = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_folder = False
                    if is_folder and not is_held:
                        folders.append(entry.name)
        except OSError:
            return None
        return Listing(st.st_ino, st.st_ctime_ns, tuple(sorted(folders)), tuple(sorted(held)))
