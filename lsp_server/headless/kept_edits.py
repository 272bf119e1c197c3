"""The user's uncommitted edits to tracked files, kept when a `kiln run --ci` starts and put back
when the run ends with one of them discarded. The command check refuses the git forms that
overwrite an edit (``git checkout -- FILE``…), but a chain of forms that each keep it does the
same: ``git commit -am wip`` then ``git reset --keep HEAD~1`` (or ``git checkout HEAD~1``,
``git revert HEAD``) leaves the file as the recorded ``HEAD`` has it, and the refs the run moved
are put back, so the edit was in no file, patch or ref. A file the run left exactly as ``HEAD``
has it, whose content changed during the run, had its edit discarded: no edit of the agent's
makes a file equal to ``HEAD`` but a revert, which ci mode refuses to git as well."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

# how much of the user's edited files is kept, in all: past it, the rest is not guarded
KEPT_BYTES = 64 * 1024 * 1024


def keep(root: Path, paths: Iterable[str]) -> dict[str, bytes]:
    """The content of each regular file among ``paths`` (tracked, edited before the run;
    workspace-relative), up to ``KEPT_BYTES`` in all."""
    kept: dict[str, bytes] = {}
    total = 0
    for path in sorted(paths):
        data = _read(root / path)
        if data is None or total + len(data) > KEPT_BYTES:
            continue
        kept[path] = data
        total += len(data)
    return kept


def put_back(root: Path, kept: dict[str, bytes], dirty: set[str]) -> list[str]:
    """Write back each kept file that the run left clean (not in ``dirty``: as ``HEAD`` has it)
    with other content than it had; the paths put back. A path that is no regular file now
    (a link the run made) is left alone: git would not call it clean."""
    restored = []
    for path, data in kept.items():
        if path in dirty or _read(root / path) in (data, None):
            continue
        try:
            fd = os.open(root / path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
        except OSError:
            continue
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        restored.append(path)
    return restored


def _read(path: Path) -> bytes | None:
    try:
        if path.is_symlink() or not path.is_file():
            return None
        return path.read_bytes()
    except OSError:
        return None
