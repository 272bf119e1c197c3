"""A workspace repository that records many nested repositories of its own (``repo01`` …), each
with one commit of a ``mod.py`` defining ``handler_N``: the shape the index's watcher and the
sandbox's bound on guarded nested repositories are tested with."""

from __future__ import annotations

import subprocess
from pathlib import Path

COMMIT = ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm"]


def nested_repositories(root: Path, count: int) -> None:
    """``root`` (existing) becomes a repository with ``count`` nested ones added to its index."""
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    for i in range(1, count + 1):
        repo = root / f"repo{i:02}"
        repo.mkdir()
        (repo / "mod.py").write_text(f"def handler_{i}():\n    return {i}\n")
        for args in (["init", "-q"], ["add", "-A"], [*COMMIT, f"init {i}"]):
            subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True)
