"""The user's stash, put back as the run found it. ``git stash drop`` and ``git stash clear`` are
refused, but the stash's entries are the reflog of ``refs/stash``, which other forms rewrite:
``git reflog delete stash@{0}``, ``git reflog expire --expire=now --all``, ``git update-ref -d
refs/stash`` (``restore_refs`` puts the ref back, not its log) or a script's ``rm
.git/logs/refs/stash``, each of which threw stashed work away with the run saying "nothing to
do". The entries are recorded when the run starts and, when they differ at the end, written
back, oldest first, each whose commit is still there (``update-ref --create-reflog``, with the
hooks off as for every Kiln git call)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lsp_server.headless.repo_git import Layout

STASH = "refs/stash"
MAX_ENTRIES = 10_000


def entries(layout: Layout) -> tuple[tuple[str, str], ...]:
    """(commit, message) of each stash entry, newest first; none without a stash."""
    proc = layout.run("log", "-g", "-z", "--format=%H %gs", STASH, "--")
    if proc.returncode != 0:
        return ()
    found = (entry.partition(" ") for entry in proc.stdout.split("\0")[:MAX_ENTRIES] if entry)
    return tuple((sha, message) for sha, _, message in found)


def restore(layout: Layout, recorded: tuple[tuple[str, str], ...]) -> bool:
    """Write the stash back as ``recorded`` when it differs now; whether it did."""
    if entries(layout) == recorded:
        return False
    layout.run("update-ref", "-d", STASH)  # the ref and its log
    for sha, message in reversed(recorded):
        if layout.run("cat-file", "-e", f"{sha}^{{commit}}").returncode == 0:
            layout.git("update-ref", "--create-reflog", "-m", message, STASH, sha)
    return True
