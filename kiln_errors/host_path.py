"""The ``PATH`` for programs Kiln itself starts on the host, outside the sandbox (git for the CI
patch and the index's history, bubblewrap).

Commands the agent runs may write anywhere in the workspace. If the user's ``PATH`` names a
folder there (an activated ``.venv/bin``, ``node_modules/.bin``, ``./bin``) or a relative entry
(``.``, an empty entry: the current folder, which is the workspace for Kiln's git calls), a
command could drop a ``git`` or ``bwrap`` there that Kiln would then run unconfined. Those entries
are left out of the lookup.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path


def host_path(untrusted: Iterable[Path], path: str | None = None) -> str:
    """``path`` (default: ``$PATH``) without relative entries and entries inside ``untrusted``."""
    folders = [Path(u).resolve() for u in untrusted]
    kept = []
    for entry in (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        where = Path(entry).resolve()
        if any(where == f or f in where.parents for f in folders):
            continue
        kept.append(entry)
    return os.pathsep.join(kept)


def host_env(untrusted: Iterable[Path], env: dict[str, str]) -> dict[str, str]:
    """``env`` with its ``PATH`` cleaned as in ``host_path``."""
    return {**env, "PATH": host_path(untrusted, env.get("PATH", os.defpath))}


def host_which(name: str, untrusted: Iterable[Path]) -> str | None:
    """Absolute path of ``name`` found on the cleaned ``PATH``, or None."""
    return shutil.which(name, path=host_path(untrusted))
