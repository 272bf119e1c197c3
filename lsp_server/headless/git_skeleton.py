"""What git needs to know the repository at all, put back before the refs are: a program of the
run (not the command check's business: ``python3 -c "shutil.rmtree('.git/refs')"``) that removed
``.git/refs`` or ``.git/HEAD`` made every later git call fail with "not a git repository", so
``restore_refs`` could not put the branches back and the run ended with exit 1, the user's
branches and tags gone. The folders ``refs``, ``refs/heads`` and ``refs/tags`` of the common
dir are made again where they are missing, and ``HEAD`` of the git dir written as it was when
the run started (the branch it named, else its commit); each only where nothing is at that
name, opened without following a link: this runs on the host."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lsp_server.headless.repo_git import Layout


def repair(layout: Layout) -> list[str]:
    """Make the missing parts again; returns what was made."""
    made: list[str] = []
    try:
        fd = os.open(layout.common_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return made
    try:
        if _mkdir("refs", fd):
            made.append(".git/refs/")
        refs = os.open("refs", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        try:
            made += [f".git/refs/{name}/" for name in ("heads", "tags") if _mkdir(name, refs)]
        finally:
            os.close(refs)
    except OSError:
        pass
    finally:
        os.close(fd)
    text = f"ref: {layout.head_ref}\n" if layout.head_ref else f"{layout.head}\n"
    if (layout.head_ref or layout.head) and _create(layout, "HEAD", text):
        made.append(".git/HEAD")
    return made


def _mkdir(name: str, dir_fd: int) -> bool:
    try:
        os.mkdir(name, dir_fd=dir_fd)
        return True
    except FileExistsError:
        return False


def _create(layout: Layout, name: str, text: str) -> bool:
    try:
        fd = os.open(layout.git_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        out = os.open(name, flags, 0o644, dir_fd=fd)
        with os.fdopen(out, "w") as fh:
            fh.write(text)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
