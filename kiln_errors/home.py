"""The user's home folder, which no workspace and no repository Kiln reads may hold.

A workspace there would hand commands and edits the shell start-up files and every credential;
a repository there (dotfiles kept in ``~/.git``, above a checkout without a ``.git`` of its own)
would let that checkout's memory import ``~/.ssh/id_rsa`` and its skill folders link to the user's
own. Shared by the agent (workspace and memory) and the skills library (project skill levels).
"""

from __future__ import annotations

import os
from pathlib import Path


def home_dirs() -> list[Path]:
    """$HOME and the account's home from the password database (they can differ)."""
    homes = {Path(os.path.expanduser("~"))}
    try:
        import pwd

        homes.add(Path(pwd.getpwuid(os.getuid()).pw_dir))
    except (ImportError, KeyError):
        pass
    return sorted(h for h in homes if str(h) not in ("", "/"))


def holds_home(folder: Path) -> bool:
    """``/``, the home folder or a folder above it."""
    folder = Path(folder).resolve()
    homes = [h.resolve() for h in home_dirs()]
    return folder == Path(folder.anchor) or any(folder == h or folder in h.parents for h in homes)
