"""The user's uncommitted work, kept when a `kiln run --ci` starts and put back when the run ends
with some of it discarded: the content of the tracked files the user had edited, of the
untracked files there were, and of the ignored ones outside ignored folders. The command check refuses the git forms that discard work
(``git checkout -- FILE``, ``git clean``…), but it reads command lines, not what they start: a
script of the repository's (``sh setup.sh``, a test's ``conftest.py``) runs ``git reset --hard``
unseen, and a chain of forms that each keep an edit discards it too (``git commit -am wip``,
then ``git reset --keep HEAD~1``, or ``git checkout HEAD~1``), while the refs the run moved are
put back: the work was in no file, patch or ref. Put back is a kept file that is gone at the
end, and one the run left clean, as ``HEAD`` has it, with other content than it had (no edit of
the agent's does that but a revert, which ci mode refuses to git as well): an edited file reset,
or an ignored one (the user's ``.env``) that a checkout of a commit tracking it overwrote. Of the
ignored files, those in an ignored folder are not kept: ``node_modules`` or build output can be
gigabytes."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lsp_server.headless.repo_git import Layout

# how much of the user's files is kept, in all: past it, the rest is not guarded
KEPT_BYTES = 64 * 1024 * 1024


def ignored(layout: Layout) -> set[str]:
    """The workspace's ignored files that lie in no ignored folder (``.env``, ``local.log``)."""
    listing = layout.git("ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory",
                         "--", ".")  # fmt: skip
    return {p for p in listing.split("\0") if p and not p.endswith("/")}


def tracked(layout: Layout, paths: set[str]) -> set[str]:
    """The ``paths`` the index tracks now."""
    if not paths:
        return set()
    return set(layout.git("ls-files", "-z", "--", ".").split("\0")) & paths


def keep(root: Path, paths: Iterable[str]) -> dict[str, bytes]:
    """The content of each regular file among ``paths`` (the workspace's dirty and ``ignored``
    paths when the run starts, before the verification), up to ``KEPT_BYTES`` in all."""
    kept: dict[str, bytes] = {}
    total = 0
    for path in sorted(paths):
        data = _read(root / path, KEPT_BYTES - total)
        if data is None:
            continue
        kept[path] = data
        total += len(data)
    return kept


def put_back(
    root: Path, kept: dict[str, bytes], dirty: set[str], overwritten: set[str]
) -> list[tuple[str, str]]:
    """Write back each kept file that is gone, and each one with other content than it had that
    the run left clean (not in ``dirty``, the paths git shows as changed, untracked or ignored:
    tracked, as ``HEAD`` has it) or that is in ``overwritten``: the user's ignored files that
    the index tracks now, as a checkout of a commit tracking one leaves it, edited since or not
    (the run's change of a file the recorded ``HEAD`` ignores is never in the patch, so putting
    the user's back loses nothing shown); (path, why) for each put back. A file is written only
    through real folders of the workspace: one the run turned into a link (to a folder outside,
    say) is left alone."""
    restored = []
    for path, data in kept.items():
        now = root / path
        if not os.path.lexists(now):
            why = f"{path}, uncommitted work before the run, was deleted during it; put back"
        elif _read(now) in (data, None):
            continue
        elif path in overwritten:
            why = f"{path}, an ignored file before the run, was overwritten by a tracked one; put back"
        elif path not in dirty:
            why = f"{path} lost the uncommitted edit it held before the run; put back"
        else:
            continue
        if _write(root, path, data):
            restored.append((path, why))
    return restored


def _read(path: Path, most: int | None = None) -> bytes | None:
    """The content of a regular file (not a link, a FIFO or a device); None when it is none, or
    holds more than ``most`` bytes, which are not read."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        with path.open("rb") as fh:
            data = fh.read() if most is None else fh.read(most + 1)
    except OSError:
        return None
    return None if most is not None and len(data) > most else data


def _write(root: Path, path: str, data: bytes) -> bool:
    """``data`` into ``root/path``, each folder on the way opened without following a link
    (and made when missing), the file too; False when that cannot be done."""
    *folders, name = path.split("/")
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        for folder in folders:
            try:
                os.mkdir(folder, dir_fd=fd)
            except FileExistsError:
                pass
            inner = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        out = os.open(name, flags, 0o644, dir_fd=fd)
        with os.fdopen(out, "wb") as fh:
            fh.write(data)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
