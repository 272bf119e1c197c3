"""The user's home folder, which no workspace and no repository Kiln reads may hold.

A workspace there would hand commands and edits the shell start-up files and every credential;
a repository there (dotfiles kept in ``~/.git``, above a checkout without a ``.git`` of its own)
would let that checkout's memory import ``~/.ssh/id_rsa`` and its skill folders link to the user's
own. Shared by the agent (workspace and memory) and the skills library (project skill levels).

It also says where Kiln's own state lives (``kiln_home``), for every package alike.
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


def kiln_home() -> Path:
    """``$KILN_HOME``, else ``~/.kiln``, read at call time, never at import; always absolute: a
    leading ``~`` is the home folder (a YAML ``env:`` block or quotes pass it unexpanded), and a
    relative path is taken from the current folder. Before, some readers expanded ``~`` and
    others made a folder named ``~`` in the current one, and a relative value was printed and
    passed on relative. ``pin_kiln_home`` fixes it once when ``kiln`` starts."""
    value = os.environ.get("KILN_HOME")
    if not value:
        return Path.home() / ".kiln"
    return Path(os.path.abspath(os.path.expanduser(value)))


def pin_kiln_home() -> None:
    """Write the absolute ``KILN_HOME`` back into the environment when ``kiln`` starts, so a
    relative one means the folder it meant there, for this process and what it starts."""
    if os.environ.get("KILN_HOME"):
        os.environ["KILN_HOME"] = str(kiln_home())
