"""Nested repositories a command records in the workspace's index.

A command may make a repository inside the workspace (``git init sub``: its ``sub/.git/config``
is an ordinary workspace file) and record it in the index as a gitlink (``git add sub``). The
user's next ``git status`` on the host then runs git inside ``sub`` under that config: its
fsmonitor, filters and hooks, outside any sandbox. So the gitlinks of the index are recorded when
the session starts and compared after every command (``agent.tools.shell``) and at the end of a
``kiln run --ci``: a gitlink the run added is taken out of the index again (the nested folder stays,
as untracked files), and a ``.git`` the run put into a submodule folder the checkout left empty is
removed. Gitlinks populated when the session started are the user's: their ``.git`` pointer and
git folder's config and hooks are made read-only in the sandbox (``attach``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from indexer import git_files
from kiln_errors.host_path import host_env

# The host's git, reading the index only: no hook (post-index-change), fsmonitor or prompt.
_SAFE = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
         "-c", "core.untrackedCache=false", "-c", "protocol.allow=never"]  # fmt: skip
MAX_GITLINKS = 10_000


def _git(root: Path, *args: str, index: str | None = None) -> subprocess.CompletedProcess[bytes]:
    if git_files.waits_on(root) is not None:  # a FIFO as config: as if it timed out, at once
        raise subprocess.TimeoutExpired(["git", *args], 0)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_ALLOW_PROTOCOL": "", "GIT_TERMINAL_PROMPT": "0"})
    if index is not None:
        env["GIT_INDEX_FILE"] = index
    return subprocess.run(
        ["git", *_SAFE, *args], cwd=root, capture_output=True, timeout=20,
        stdin=subprocess.DEVNULL, env=host_env([root], env),
    )  # fmt: skip


def gitlinks(root: Path) -> dict[str, bool]:
    """Each gitlink of the index under ``root`` (relative path) -> whether its folder holds a
    ``.git`` (git looks inside it then); empty outside a repository."""
    try:
        proc = _git(root, "ls-files", "--stage", "-z")
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if proc.returncode != 0:
        return {}
    found: dict[str, bool] = {}
    for entry in proc.stdout.split(b"\0"):
        if not entry.startswith(b"160000 "):
            continue
        rel = entry.split(b"\t", 1)[-1].decode("utf-8", "surrogateescape")
        dotgit = root / rel / ".git"
        found[rel] = dotgit.exists() or dotgit.is_symlink()
        if len(found) >= MAX_GITLINKS:
            break
    return found


# Each repository watched costs a ``git ls-files`` when the session starts and after every
# command (``undo``), and ``attach`` reads its config: the bound keeps a command's overhead small
# in a workspace of many checkouts. Those left out are counted and said (``unwatched``).
MAX_DEPTH, MAX_NESTED = 3, 50


class GitlinkGuard:
    def __init__(self, root: Path, depth: int = 0) -> None:
        self.root = Path(root)
        self.start = gitlinks(self.root)
        # ``git status`` recurses: a populated gitlink's own index is watched the same way
        populated = self.populated()
        nested = populated[:MAX_NESTED] if depth < MAX_DEPTH else []
        self.left_out = len(populated) - len(nested)
        self.children = {rel: GitlinkGuard(self.root / rel, depth + 1) for rel in nested}

    def unwatched(self) -> int:
        """The user's nested repositories left out, past ``MAX_NESTED`` in a repository or
        deeper than ``MAX_DEPTH``: their git config and hooks are not made read-only."""
        return self.left_out + sum(child.unwatched() for child in self.children.values())

    def populated(self) -> list[str]:
        """Gitlinks populated when the session started (the user's nested repositories)."""
        return [rel for rel, present in self.start.items() if present]

    def repositories(self) -> list[Path]:
        """The nested repositories watched, at every depth (``root``'s own left out)."""
        return [p for child in self.children.values() for p in (child.root, *child.repositories())]

    def undo(self) -> list[str]:
        """Neutralise the nested repositories recorded since the start; returns one note each."""
        notes: list[str] = []
        for rel, present in gitlinks(self.root).items():
            if not present or self.start.get(rel):
                continue
            if rel in self.start:  # the checkout's empty submodule folder: the .git is the run's
                link = _first_link(self.root, rel)
                if link is not None:  # never followed: it may lead to the user's own repository
                    link.unlink(missing_ok=True)
                    notes.append(f"{link.relative_to(self.root).as_posix()} (a link) removed")
                    continue
                _remove(self.root / rel / ".git")
                notes.append(f"{rel}/.git removed")
            elif self._unstage(rel):
                notes.append(f"{rel} taken out of the index")
            else:
                notes.append(
                    f"{rel} could not be taken out of the index: run git rm --cached {rel}"
                )
        for rel, child in self.children.items():
            notes += [f"{rel}/{note}" for note in child.undo()]
        return notes

    def _unstage(self, rel: str) -> bool:
        try:
            if _git(self.root, "update-index", "--force-remove", "--", rel).returncode == 0:
                return True
            return self._unstage_locked(rel)
        except (OSError, subprocess.TimeoutExpired):
            return False

    def _unstage_locked(self, rel: str) -> bool:
        """A command may leave ``index.lock`` behind so that git refuses to write the index (the
        user's ``git status`` still reads it): edit a copy and rename it over the index."""
        proc = _git(self.root, "rev-parse", "--git-path", "index")
        index = (self.root / proc.stdout.decode().strip()).resolve()
        if proc.returncode != 0 or not index.is_file():
            return False
        fd, tmp = tempfile.mkstemp(dir=index.parent, prefix=".kiln-index.")
        os.close(fd)
        try:
            shutil.copyfile(index, tmp)
            if _git(self.root, "update-index", "--force-remove", "--", rel, index=tmp).returncode:
                return False
            os.replace(tmp, index)
            return True
        finally:
            Path(tmp).unlink(missing_ok=True)


def _first_link(root: Path, rel: str) -> Path | None:
    """The first folder on the way from ``root`` to ``rel/.git`` that is a link: this runs on
    the host, and a command may swap an empty submodule folder for a link to a repository
    outside the workspace, whose ``.git`` was then removed."""
    parts = Path(rel).parts
    for i in range(1, len(parts) + 1):
        here = root.joinpath(*parts[:i])
        if here.is_symlink():
            return here
    return None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
