"""The ``exec`` lines of a rebase or cherry-pick a command leaves in progress. Git keeps what is
left to do in ``.git/rebase-merge/git-rebase-todo`` (``.git/sequencer/todo``), and the user's own
``git rebase --continue`` runs each ``exec`` line there, on the host, outside any sandbox: a
command that stopped a ``git rebase --exec CMD`` on a conflict, or wrote the files itself, would
have the user run CMD. So an ``exec`` line a command added is turned into a comment when it ends
(git skips comments), and a todo file or folder that is a link, not a regular file or over
4 MB is removed.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

TODOS = ("rebase-merge/git-rebase-todo", "sequencer/todo")
MAX_BYTES = 4 * 1024 * 1024
EXEC = re.compile(r"[ \t]*(?:exec|x)(?:[ \t]|$)")
MAX_WORKTREES = 200


def git_folders(root: Path) -> list[Path]:
    """The workspace's git folder and its linked worktrees' folders (bounded)."""
    dotgit = root / ".git"
    if dotgit.is_symlink() or not dotgit.is_dir():
        return []
    try:
        worktrees = sorted((dotgit / "worktrees").iterdir())[:MAX_WORKTREES]
    except OSError:
        worktrees = []
    return [dotgit, *(w for w in worktrees if w.is_dir() and not w.is_symlink())]


def exec_lines(root: Path) -> dict[str, set[str]]:
    """Each todo file (relative to ``root``) with its ``exec`` lines now."""
    found: dict[str, set[str]] = {}
    for folder in git_folders(root):
        for name in TODOS:
            text = _read(folder / name)
            if text is not None:
                rel = (folder / name).relative_to(root).as_posix()
                found[rel] = {line for line in text.splitlines() if EXEC.match(line)}
    return found


def disarm(root: Path, before: dict[str, set[str]]) -> list[str]:
    """Comment out the ``exec`` lines added since ``before``; remove a todo that is a link or
    not a regular file. Returns what was changed, for the command's output."""
    changed: list[str] = []
    for folder in git_folders(root):
        for name in TODOS:
            path = folder / name
            rel = path.relative_to(root).as_posix()
            odd = _odd(path)
            if odd is not None:
                if odd.is_dir() and not odd.is_symlink():
                    continue  # a folder where git wants a file: git fails on it, runs nothing
                odd.unlink(missing_ok=True)
                changed.append(odd.relative_to(root).as_posix())
                continue
            text = _read(path)
            if text is None:
                continue
            old = before.get(rel, set())
            lines = text.splitlines(keepends=True)
            new = [
                f"# {line}" if EXEC.match(line) and line.rstrip("\r\n") not in old else line
                for line in lines
            ]
            if new != lines:
                _replace(path, "".join(new))
                changed.append(f"exec lines of {rel}")
    return changed


def _odd(path: Path) -> Path | None:
    """The todo's folder or the todo itself when it is a link or not a regular file."""
    for candidate in (path.parent, path):
        try:
            mode = os.lstat(candidate).st_mode
        except OSError:
            return None
        wanted = stat.S_ISDIR if candidate == path.parent else stat.S_ISREG
        if not wanted(mode) or (candidate == path and os.lstat(path).st_size > MAX_BYTES):
            return candidate
    return None


def _read(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return f.read(MAX_BYTES).decode("utf-8", "replace")


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.kiln")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
