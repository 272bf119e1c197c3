"""Memory files a command must not create: read-only binds cannot cover a file that does not
exist yet, so the files a command created at these names are removed when it ends (the PID
namespace has ended every process it started by then, so nothing can race the check)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from agent.sandbox.bwrap import submodule_config
from agent.write_policy import AUTORUN_FILES

# At the workspace root: memory and settings loaded into every session, skill folders whose
# contents the next session would offer, direnv's auto-run file, and the files an editor or git
# acts on by itself (``AUTORUN_FILES``: editor settings and tasks, ``.git/commondir``).
GUARDED = (
    "KILN.md", "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", ".envrc", ".kiln/settings.json", ".kiln/mcp.json",
    ".kiln/skills", ".claude", ".agents", *AUTORUN_FILES,
)  # fmt: skip


class MemoryGuard:
    def __init__(self, root: Path, extra: Iterable[str] = ()) -> None:
        self.root = Path(root)
        pointers = [  # a submodule's git folder may not gain a pointer to another config
            p.relative_to(self.root).as_posix()
            for p in submodule_config(self.root)
            if p.name in ("commondir", "config.worktree")
        ]
        names = (*GUARDED, *pointers, *extra)
        self.absent = [name for name in names if not _exists(self.root / name)]

    def undo(self) -> list[str]:
        """Remove what the command created at guarded names; returns their names."""
        removed = []
        for name in self.absent:
            path = self.root / name
            if _exists(path):
                if path.is_dir() and not path.is_symlink():
                    import shutil

                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
                removed.append(name)
        return removed


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()
