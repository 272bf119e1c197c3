"""Config files the repository's git config includes from the work tree.

`.git/config` is read-only to commands and never written by the file tools, but an
``include.path = ../shared.gitconfig`` (a common way to share settings) makes a tracked file part
of that config: written by the agent, its ``core.fsmonitor`` or ``core.hooksPath`` runs at the
user's next plain ``git status`` or ``git commit``, on the host. These are the files to protect:
every config file git reads in the repository now (``--show-origin``, nested includes
followed), and every file an ``include.path`` or ``includeIf.*.path`` in them names, active or
not (a command may switch to the branch an ``onbranch:`` condition names). The same holds for
the user's nested repositories (``nested``: the populated gitlinks ``GitlinkGuard`` watches, 3
levels deep, at most 50 per repository), since the user's ``git status`` recurses into them under
their config. The git calls run no hook, filter or fsmonitor.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from indexer import git_files
from kiln_errors.host_path import host_env

_INCLUDE_KEYS = r"^include(if\..*)?\.path$"


def _git(root: Path, *args: str) -> str:
    """git's answer in ``root``; "" when it fails, and at once when it would wait on a config
    file: a FIFO or a device an include names (``indexer.git_files.waits_on``)."""
    if git_files.waits_on(root) is not None:
        return ""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_ALLOW_PROTOCOL="", GIT_TERMINAL_PROMPT="0")
    try:
        proc = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", *args],
            cwd=root, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL,
            env=host_env([root], env),
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout if proc.returncode == 0 else ""


def included_configs(root: Path, nested: Iterable[Path] = ()) -> list[Path]:
    """The config files inside ``root`` that the repository's config includes (existing or
    not), and those the config of each repository in ``nested`` includes; each repository's own
    config left out (it is protected as such)."""
    root = Path(root).resolve()
    found = _included(root) - {(root / ".git" / "config").resolve()}
    for repo in (Path(r).resolve() for r in nested):
        own = _git(repo, "rev-parse", "--git-path", "config").strip()
        found |= _included(repo) - ({(repo / own).resolve()} if own else set())
    return sorted(p for p in found if p == root or root in p.parents)


def _included(repo: Path) -> set[Path]:
    """Every config file the local config of the repository at ``repo`` reads or names."""
    fields = _git(repo, "config", "--local", "--includes", "--list", "--show-origin", "-z")
    origins = {
        (repo / f[len("file:") :]).resolve()
        for f in fields.split("\0")[::2]
        if f.startswith("file:")
    }
    found = set(origins)
    for origin in origins:
        values = _git(repo, "config", "--file", str(origin), "-z", "--get-regexp", _INCLUDE_KEYS)
        for entry in filter(None, values.split("\0")):
            value = entry.partition("\n")[2]
            if not value:
                continue
            target = Path(os.path.expanduser(value))
            found.add((target if target.is_absolute() else origin.parent / target).resolve())
    return found
