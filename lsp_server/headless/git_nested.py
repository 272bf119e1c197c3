"""Repositories nested in the one under test, which Kiln's own git calls would enter.

``git status`` and ``git add -A`` look inside every populated gitlink (a submodule, or a
repository the agent made and added) to see whether it is dirty, and they do it under that
repository's own config. That config is the agent's to write (``sub/.git/config`` is an ordinary
workspace file; ``.git/modules/*`` is not read-only in the sandbox), so a filter driver planted
there would run on the host. ``-c`` options reach those inner git processes (through
``GIT_CONFIG_PARAMETERS``), so the caller switches off the drivers these configs define too.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

MAX_NESTED = 64  # repositories looked into, all depths together


def gitlinks(root: Path, run: Callable[..., subprocess.CompletedProcess[str]]) -> set[str]:
    """Gitlink paths of the index and of HEAD (reading both runs no driver)."""
    paths: set[str] = set()
    for args in (["ls-files", "--stage", "-z"], ["ls-tree", "-r", "-z", "--full-tree", "HEAD"]):
        proc = run(root, *args)
        for entry in proc.stdout.split("\0"):
            meta, _, path = entry.partition("\t")
            if meta.startswith("160000 ") and path:
                paths.add(path)
    return paths


def nested_repositories(
    root: Path, run: Callable[..., subprocess.CompletedProcess[str]]
) -> list[Path]:
    """Populated gitlinks under ``root``, at every depth (at most ``MAX_NESTED``)."""
    found: list[Path] = []
    queue = [root]
    while queue and len(found) < MAX_NESTED:
        repo = queue.pop(0)
        for rel in sorted(gitlinks(repo, run)):
            inner = repo / rel
            if (inner / ".git").exists() and inner not in found and len(found) < MAX_NESTED:
                found.append(inner)
                queue.append(inner)
    return found
