"""What git itself says a word of a command names: a revision of the workspace's repository, or
an alias. ``git checkout NAME`` switches to NAME when git resolves it as a revision, and otherwise
takes NAME for a path and overwrites that file's uncommitted edits; the name's shape cannot tell
the two apart (``Makefile``, ``main``). ``git co Makefile`` runs what the configuration says
``co`` is (``alias.co = checkout``), from the repository's config, the user's, the system's
(``/etc/gitconfig``, or the file ``GIT_CONFIG_SYSTEM`` names), or a ``-c`` of the command itself.
``agent.command_risk`` asks here for both."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from indexer import git_files
from kiln_errors.host_path import host_env

# the workspace is the user's checkout or one under CI: no fsmonitor or hook, and a folder of it
# shaped like a bare repository is not taken for one
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
         "-c", "safe.bareRepository=explicit")  # fmt: skip
# git's options before the subcommand that change which configuration it reads; they are passed
# on when asking for an alias (after them, ``_SAFE`` has the last word)
_CONFIG_OPTIONS = {"-c", "-C", "--git-dir", "--work-tree"}
# the environment's git configuration, which the commands see as well: the system config among
# it (a runner image's ``/etc/gitconfig`` may define ``alias.co = checkout``)
_CONFIG_ENV = ("GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "GIT_CONFIG_GLOBAL",
               "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM")  # fmt: skip
_INCLUDE_KEY = re.compile(r"include(if\..*)?\.path", re.IGNORECASE)
# the value of an alias git could not be asked for: taken as a shell alias (refused in ci mode)
UNKNOWN = "!"


def _git(
    root: Path, args: list[str], config: bool = False, options: list[str] | None = None
) -> subprocess.CompletedProcess[str] | None:
    """git run as Kiln runs it on the host; ``config``: with the configuration the commands see
    too (``agent.sandbox.git_config_env``: ``GIT_CONFIG_COUNT``…, and the system config).
    ``options``: git's options among ``args`` that choose its configuration. None, at once,
    when git would wait on a config file: a FIFO or a device a config includes (``_waits``)."""
    if options is not None and _waits(root, options, config):
        return None
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") or (config and k.startswith(_CONFIG_ENV))}  # fmt: skip
    env.update({"GIT_ALLOW_PROTOCOL": "", "GIT_TERMINAL_PROMPT": "0"})
    if not config:  # refs and command names only; an alias is looked up where git looks
        env["GIT_CONFIG_NOSYSTEM"] = "1"
    try:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=20,
            stdin=subprocess.DEVNULL, env=host_env([root], env),
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None


def _waits(root: Path, options: list[str], config: bool) -> bool:
    """Whether git started in ``root`` with ``options`` would open a FIFO or a device as config
    (``include.path`` naming one, in a config file or a ``-c``) before it answered: it blocks
    there until a writer comes, and each command check waited its whole timeout (20 s) for a
    refusal (``indexer.git_files.waits_on``)."""
    start, configs = root, []
    pairs = [
        (options[i], options[i + 1])
        for i in range(len(options) - 1)
        if options[i] in _CONFIG_OPTIONS
    ]
    pairs += [tuple(o.split("=", 1)) for o in options if o.startswith("--") and "=" in o]  # type: ignore[misc]
    includes = [v for k, v in pairs if k == "-c"]
    env = os.environ if config else {}
    count = env.get("GIT_CONFIG_COUNT", "0")
    for n in range(min(int(count), 100) if count.isdigit() else 0):
        includes.append(
            f"{env.get(f'GIT_CONFIG_KEY_{n}', '')}={env.get(f'GIT_CONFIG_VALUE_{n}', '')}"
        )
    for key, value in pairs:
        if key == "-C":
            start = start / value
        elif key == "--git-dir":
            configs += [start / value / "config", start / value / "config.worktree"]
    for entry in includes:
        key, _, value = entry.partition("=")
        target = Path(os.path.expanduser(value))
        if _INCLUDE_KEY.fullmatch(key) and target.is_absolute():  # git refuses a relative one
            configs.append(target)
    if config and not env.get("GIT_CONFIG_NOSYSTEM"):
        configs.append(Path(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    if config and env.get("GIT_CONFIG_GLOBAL"):
        configs.append(Path(env["GIT_CONFIG_GLOBAL"]))
    return git_files.waits_on(root, configs, start) is not None


def resolves(root: Path, name: str) -> bool:
    """Whether ``git checkout NAME`` in ``root`` would take NAME as a revision (``-`` is the
    branch checked out before). ``rev-parse`` reads refs only: no hook, filter or fsmonitor;
    False when git fails or ``root`` is in no repository."""
    word = "@{-1}" if name == "-" else name
    if word.startswith("-"):
        return False  # an option, never a revision
    proc = _git(root, [*_SAFE, "rev-parse", "--verify", "--quiet", word], options=[])
    return proc is not None and proc.returncode == 0


@functools.cache
def _commands(root: Path) -> frozenset[str]:
    """The names git runs as its own commands (built in, in its exec path, ``git-NAME`` on the
    ``PATH``): an alias of one of these names is never used."""
    proc = _git(root, ["--list-cmds=builtins,main,others"])
    ok = proc is not None and proc.returncode == 0
    return frozenset(proc.stdout.split()) if proc is not None and ok else frozenset()


def alias(root: Path, options: tuple[str, ...], verb: str) -> str | None:
    """What ``git OPTIONS VERB`` runs in ``root`` when VERB is an alias: its value (``checkout``,
    ``!sh …``); None when VERB is one of git's own commands; "" when it is neither (git stops
    there). ``options`` are git's options before VERB (``-c alias.x=stash``, ``-C dir``): those
    that change the configuration are passed on. ``git config`` reads configuration only."""
    if verb in _commands(root):
        return None
    passed: list[str] = []
    for i, arg in enumerate(options):
        key = arg.split("=", 1)[0]
        if key in _CONFIG_OPTIONS:
            passed += [arg] if "=" in arg and key.startswith("--") else list(options[i : i + 2])
        elif arg == "--bare":
            passed.append(arg)
    args = [*passed, *_SAFE, "config", "--get", f"alias.{verb}"]
    proc = _git(root, args, config=True, options=passed)
    if proc is None or proc.returncode not in (0, 1):
        return UNKNOWN if proc is None else ""  # git refuses the configuration: it stops too
    if proc.returncode == 1 and _autocorrects(root, passed):
        return UNKNOWN
    return proc.stdout.removesuffix("\n") if proc.returncode == 0 else ""


# ``help.autocorrect`` values under which git runs no command in place of an unknown verb
_NO_AUTOCORRECT = {"0", "never", "show", "false", "no", "off"}


def _autocorrects(root: Path, passed: list[str]) -> bool:
    """Whether git runs the command nearest an unknown verb in its place: ``help.autocorrect``
    (``immediate``, ``prompt`` with ``yes |``, a delay in tenths of a second), from any config
    or a ``-c``, made ``git -c help.autocorrect=immediate rset --hard`` a ``git reset --hard``
    that the check took for a verb git stops at."""
    args = [*passed, *_SAFE, "config", "--get", "help.autocorrect"]
    proc = _git(root, args, config=True, options=passed)
    if proc is None:
        return True
    return proc.returncode == 0 and proc.stdout.strip().lower() not in _NO_AUTOCORRECT


Asker = Callable[[tuple[str, ...], str], str | None]


def askers(root: Path) -> tuple[Callable[[str], bool], Asker]:
    """``resolves`` and ``alias`` for ``root``, as ``agent.command_risk.line_risk`` takes them."""
    return functools.partial(resolves, root), functools.partial(alias, root)
