"""Whose a repository is: git's ``safe.directory`` rule, for the repositories Kiln finds itself.

git refuses a repository another user of the machine owns (a ``.git`` someone else made in
``/tmp``, above a workspace there) unless the user's own config lists it, or ``*``, in
``safe.directory``: that user wrote its config, its hooks and its files. Kiln reads more of a
repository than git does (its memory files and their imports, its skill folders, its history
for the index), so a repository git would refuse is not the project's for Kiln either. The list
is read from the user's own config only (system and global, as git reads it; never the
repository's, which its owner wrote). Shared by the agent (memory), the skills library (project
skill levels) and the index (history).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kiln_errors.host_path import host_env

_CONFIG_TIMEOUT = 10.0


def _owners() -> set[int]:
    """The user running Kiln; under ``sudo`` also the user who ran it, as git allows."""
    uid = os.geteuid()
    owners = {uid}
    sudo = os.environ.get("SUDO_UID", "")
    if uid == 0 and sudo.isascii() and sudo.isdigit():  # int() refuses "²", which isdigit passes
        owners.add(int(sudo))
    return owners


def owned(folder: Path) -> bool:
    """Whether ``folder`` and its ``.git`` (a link not followed) belong to the user running
    Kiln, as git checks them."""
    if not hasattr(os, "geteuid"):  # no owners to compare (Windows): git does not check either
        return True
    owners = _owners()
    try:
        return all(os.lstat(p).st_uid in owners for p in (folder, folder / ".git"))
    except OSError:
        return False


def safe_directories(untrusted: Path) -> list[str]:
    """The user's ``safe.directory`` values (system config, then global, as git reads them;
    an empty value clears those before it). ``untrusted``: the repository, whose folders are
    kept off the ``PATH`` git is looked up on."""
    scopes = ["--global"]
    if os.environ.get("GIT_CONFIG_NOSYSTEM", "").lower() not in ("1", "true", "yes", "on"):
        scopes.insert(0, "--system")
    values: list[str] = []
    env = host_env([untrusted], dict(os.environ))
    for scope in scopes:
        try:
            proc = subprocess.run(
                ["git", "config", scope, "--includes", "-z", "--get-all", "safe.directory"],
                cwd="/", env=env, capture_output=True, stdin=subprocess.DEVNULL,
                timeout=_CONFIG_TIMEOUT,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            continue
        for value in proc.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]:
            values = [*values, value] if value else []
    return values


def listed(folder: Path, values: list[str]) -> bool:
    """Whether ``values`` name ``folder`` as git matches them: ``*``, the folder itself (``~``
    expanded, links resolved), or a folder above it written ``…/*``."""
    here = Path(folder).resolve()
    for value in values:
        if value == "*":
            return True
        wide = value.endswith("/*")
        named = Path(os.path.expanduser(value[:-2] if wide else value))
        if not named.is_absolute():
            continue
        named = named.resolve()
        if here == named or (wide and named in here.parents):
            return True
    return False


def foreign(folder: Path) -> bool:
    """Whether git would refuse the repository at ``folder`` (the folder holding its ``.git``)
    as another user's: owned by someone else and not listed in the user's
    ``safe.directory``."""
    return not owned(folder) and not listed(folder, safe_directories(folder))
