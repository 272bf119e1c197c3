"""The files git opens before the index's ``git log`` lists a commit, checked first: each must
be a regular file or absent.

git opens its config, every file an ``include.path`` or ``includeIf.*.path`` there names,
``HEAD``, the ref it names, ``packed-refs``, ``shallow``, the commit-graph and the alternates
list with a blocking ``open()``: a FIFO in place of one (a tracked ``shared.gitconfig`` the
config includes, a checkout that ships its ``.git``, a command that wrote into ``.git``) held each
of the index's git calls for its whole timeout, 60 s under the index's lock (searches waited
too), and a device such as ``/dev/tty`` the same. So each is read as ``indexer.reading`` reads a
file of the checkout (never blocking), and each config is given to git on its standard input,
outside any repository, to list the files it includes (``--no-includes``: git opens none of
them). One that is not a regular file leaves the recorded history as it is, with one line saying
why (``blocker``). Includes are followed 10 deep, as git follows them, whatever their condition.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from indexer import git_dir
from indexer.reading import NotRegular, read_regular
from kiln_errors.host_path import host_env

MAX_CONFIG_BYTES = 4 << 20  # a config larger than this is not read through: its includes unknown
MAX_CONFIGS = 50
MAX_DEPTH = 10  # git's own bound on nested includes
_INCLUDE_KEYS = r"^include(if\..*)?\.path$"
# In the git folder (a linked worktree's has its own HEAD), then in the common dir.
GIT_DIR_FILES = ("HEAD", "commondir", "config.worktree")
COMMON_FILES = (
    "packed-refs", "shallow", "info/grafts", "objects/info/alternates",
    "objects/info/commit-graph", "objects/info/commit-graphs/commit-graph-chain",
)  # fmt: skip


def blocker(root: Path) -> str | None:
    """Why the index's git calls at ``root`` would wait on a file (``path: reason``), or None."""
    why = _blocker(root, [], root)
    return None if why is None else why + _NOT_READ


def waits_on(root: Path, configs: Iterable[Path] = (), start: Path | None = None) -> str | None:
    """Why a git call at ``start`` (default ``root``; ``-C``) would wait on a file before it
    did anything (``path: git config, included by …, is a FIFO, which git would wait on``), or
    None. ``configs`` are more config files it reads: the system's, the file a
    ``-c include.path=…`` names. Kiln's own git calls on the host check it first: a FIFO or a
    device the repository's config includes held each for its whole timeout."""
    return _blocker(root, list(configs), start or root, limits=False)


def _blocker(root: Path, extra: list[Path], start: Path, limits: bool = True) -> str | None:
    found = git_dir.folders(start)
    home = Path(os.environ.get("HOME") or os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    configs = [home / ".gitconfig", xdg / "git" / "config", *extra]
    if found is not None:
        folder, common = found
        for path in [*(folder / n for n in GIT_DIR_FILES), *(common / n for n in COMMON_FILES)]:
            if _kind(path) is not None:
                return f"{_shown(root, path)}: {_kind(path)} in git's folder{_WAITS}"
        ref = _head_ref(folder / "HEAD")
        if ref is not None and _kind(common / ref) is not None:
            return f"{_shown(root, common / ref)}: {_kind(common / ref)} ({ref}){_WAITS}"
        configs += [common / "config", folder / "config.worktree"]
    return _config_blocker(root, configs, home, limits)


_NOT_READ = ": the git history is not read this time"
_WAITS = ", which git would wait on"


def _config_blocker(root: Path, configs: list[Path], home: Path, limits: bool) -> str | None:
    todo: list[tuple[Path, Path | None, int]] = [(path, None, 0) for path in configs]
    seen: set[Path] = set()
    while todo and len(seen) < MAX_CONFIGS:
        path, origin, depth = todo.pop(0)
        if path in seen:
            continue
        seen.add(path)
        try:
            data = read_regular(path, MAX_CONFIG_BYTES)
        except NotRegular as exc:
            if _what(exc) != "a folder":  # git fails at once on a folder
                by = f", included by {_shown(root, origin)}," if origin is not None else ""
                return f"{_shown(root, path)}: git config{by} is {_what(exc)}{_WAITS}"
            continue
        except OSError:
            continue  # missing or unreadable: git goes on without it, or fails at once
        if len(data) > MAX_CONFIG_BYTES:
            if not limits:  # a call waits on no such file: it only reads it longer
                continue
            return f"{_shown(root, path)}: git config over {MAX_CONFIG_BYTES >> 20} MB"
        if depth < MAX_DEPTH and b"path" in data.lower():
            todo += [(target, path, depth + 1) for target in _includes(root, path, data, home)]
    return None


def _includes(root: Path, origin: Path, data: bytes, home: Path) -> list[Path]:
    """The files the config ``data`` (read from ``origin``) includes, conditions ignored."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    # Outside any repository, without the user's config: git opens no file but its input.
    env.update(GIT_DIR=os.devnull + "/none", GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    try:
        proc = subprocess.run(
            ["git", "config", "--no-includes", "--file", "-", "-z", "--get-regexp", _INCLUDE_KEYS],
            input=data, capture_output=True, timeout=20, env=host_env([root], env), cwd="/",
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    out: list[Path] = []
    for entry in filter(None, proc.stdout.split(b"\0")):
        value = os.fsdecode(entry.partition(b"\n")[2])
        if not value or value.startswith("%(prefix)/"):
            continue
        if value.startswith("~/"):
            out.append(home / value[2:])
        else:
            target = Path(os.path.expanduser(value))
            out.append(target if target.is_absolute() else origin.parent / target)
    return out


def _kind(path: Path) -> str | None:
    """What ``path`` is when it exists and is no regular file (links followed, as git does)."""
    try:
        read_regular(path, 0)
    except NotRegular as exc:
        return None if _what(exc) == "a folder" else _what(exc)  # a folder: git fails at once
    except OSError:
        return None
    return None


def _what(exc: NotRegular) -> str:
    text = str(exc)  # "not a regular file (a FIFO)"
    return text[text.find("(") + 1 : -1] if "(" in text else text


def _head_ref(head: Path) -> str | None:
    """The loose ref ``HEAD`` names (``refs/heads/main``), when it names one inside ``refs/``."""
    try:
        text = read_regular(head, 4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    ref = text[len("ref:") :].strip() if text.startswith("ref:") else ""
    parts = Path(ref).parts
    return ref if parts[:1] == ("refs",) and ".." not in parts else None


def _shown(root: Path, path: Path | None) -> str:
    if path is None:
        return ""
    path = Path(os.path.normpath(path))  # ".git/../shared.gitconfig" as the user reads it
    for base in (root, root.resolve()):
        if base == path or base in path.parents:
            return path.relative_to(base).as_posix()
    return str(path)
