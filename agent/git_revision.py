"""Whether a word names a revision of the workspace's repository, asked of git itself.
``git checkout NAME`` switches to NAME when git resolves it as a revision, and otherwise takes
NAME for a path and overwrites that file's uncommitted edits; the name's shape cannot tell the
two apart (``Makefile``, ``main``), so ``agent.command_risk`` asks here."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kiln_errors.host_path import host_env

# the workspace is the user's checkout or one under CI: no fsmonitor or hook, and a folder of it
# shaped like a bare repository is not taken for one
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
         "-c", "safe.bareRepository=explicit")  # fmt: skip


def resolves(root: Path, name: str) -> bool:
    """Whether ``git checkout NAME`` in ``root`` would take NAME as a revision (``-`` is the
    branch checked out before). ``rev-parse`` reads refs only: no hook, filter or fsmonitor;
    False when git fails or ``root`` is in no repository."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_ALLOW_PROTOCOL": "", "GIT_TERMINAL_PROMPT": "0"})
    word = "@{-1}" if name == "-" else name
    if word.startswith("-"):
        return False  # an option, never a revision
    try:
        proc = subprocess.run(
            ["git", *_SAFE, "rev-parse", "--verify", "--quiet", word],
            cwd=root, capture_output=True, timeout=20, stdin=subprocess.DEVNULL,
            env=host_env([root], env),
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0
