"""Commands that run another command, and how to find the one they run.

A deny rule on ``rm`` must meet ``rm`` wherever the line runs it: behind ``xargs``, ``env``,
``timeout``…, inside ``find -exec … ;``, in the script of ``sh -c``, ``flock FILE -c`` or
``script -c``. Each wrapper's options are listed with those that take the next word as their
value, so ``xargs --max-procs 4 rm`` is ``rm``, not ``4``; GNU's optional values (``xargs -i``,
``watch -d``) never take the next word. ``git``'s global options (``-C DIR``, ``-c KEY=VALUE``,
``--git-dir``…) come before its subcommand, so ``git -C . push`` is also seen as ``git push``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from agent.cmake_commands import cmake_command


@dataclass(frozen=True)
class Wrapper:
    values: frozenset[str] = frozenset()  # options whose value is the next word
    skip: int = 0  # operands before the command (chroot's NEWROOT, taskset's mask, flock's file)
    scripts: frozenset[str] = frozenset()  # options whose value is a shell command line


def _w(values: str = "", skip: int = 0, scripts: str = "") -> Wrapper:
    return Wrapper(frozenset(values.split()), skip, frozenset(scripts.split()))


WRAPPERS: dict[str, Wrapper] = {
    "env": _w("-u --unset -C --chdir -S --split-string -a --argv0"),
    "nohup": _w(),
    "cmake": _w(),  # `cmake -E env|chdir|time CMD`, and its file subcommands as cp, rm…
    "timeout": _w("-s --signal -k --kill-after"),
    "nice": _w("-n --adjustment"),
    "ionice": _w("-c --class -n --classdata -p --pid -P --pgid -u --uid"),
    "command": _w(),
    "builtin": _w(),
    "exec": _w("-a"),
    "time": _w("-f --format -o --output"),
    "stdbuf": _w("-i --input -o --output -e --error"),
    "sudo": _w(
        "-u --user -g --group -C --close-from -D --chdir -h --host -p --prompt -r --role "
        "-t --type -U --other-user -T --command-timeout"
    ),  # fmt: skip
    "doas": _w("-u -C"),
    # -e, -i, -l take an attached value only (``-i{}``): the next word is the command.
    "xargs": _w(
        "-a --arg-file -d --delimiter -E -I -L -n --max-args -P --max-procs -s "
        "--max-chars --process-slot-var"
    ),  # fmt: skip
    "watch": _w("-n --interval -q --equexit"),
    "chroot": _w("--userspec --groups", skip=1),
    "setsid": _w(),
    "unbuffer": _w(),
    "caffeinate": _w("-t -w"),
    "busybox": _w(),
    "toybox": _w(),
    "flock": _w("-w --wait --timeout -E --conflict-exit-code", skip=1, scripts="-c --command"),
    "script": _w(
        "-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -m --logging-format",
        scripts="-c --command",
    ),  # fmt: skip
    "taskset": _w(skip=1),
    "chrt": _w("-T --sched-runtime -P --sched-period -D --sched-deadline", skip=1),
    "unshare": _w("-S --setuid -G --setgid -R --root -w --wd --propagation --setgroups"),
    "prlimit": _w("-p --pid -o --output"),
    "strace": _w("-o -e -p -s -u -E -a -P -I -b -X -S -O"),
    "ltrace": _w("-o -e -p -s -u -a -n -l -x -w -A -D -F"),
    "faketime": _w("-f", skip=1),
    "firejail": _w(),
    "coproc": _w(),  # bash: `coproc rm -rf src` runs rm
    # Session helpers that start the command after their own set-up.
    "ssh-agent": _w("-a -E -O -P -t"),
    "dbus-run-session": _w("--config-file --dbus-daemon"),
    "fakeroot": _w("-l --lib --faked -s -i -b"),
    "setpriv": _w(
        "--reuid --regid --groups --inh-caps --ambient-caps --bounding-set --securebits "
        "--pdeathsig --selinux-label --apparmor-profile --landlock-access --landlock-rule"
    ),  # fmt: skip
    "sg": _w(skip=1, scripts="-c"),
    "su": _w(
        "-s --shell -g --group -G --supp-group -w --whitelist-environment", scripts="-c --command"
    ),  # fmt: skip
    "runuser": _w(
        "-u --user -g --group -G --supp-group -s --shell -w --whitelist-environment",
        scripts="-c --command",
    ),  # fmt: skip
    "nsenter": _w("-t --target -S --setuid -G --setgid -w --wd -r --root"),
    "valgrind": _w(),
    "eatmydata": _w(),
    "chronic": _w(),
    # util-linux's: `setarch ARCH [flags] cmd`, and its names per architecture (`linux64 cmd`).
    "setarch": _w(skip=1),
    **{arch: _w() for arch in ("linux32", "linux64", "uname26", "i386", "x86_64", "aarch64",
                               "arm", "armv7l", "ppc", "ppc32", "ppc64", "ppc64le", "s390",
                               "s390x", "mips", "mips64", "parisc", "sparc", "sparc64")},
    "choom": _w("-n --adjust -p --pid"),
    "uclampset": _w("-m -M -p --pid"),
    "numactl": _w("-N --cpunodebind -m --membind -C --physcpubind -p --preferred -i "
                  "--interleave -P --preferred-many -w --weighted-interleave"),
    "perf": _w("-e --event -o --output -p --pid -t --tid -C --cpu -G --cgroup -r --repeat "
               "-x --field-separator -I --interval-print -F --freq -c --count --pre --post",
               skip=1),  # `perf stat [options] cmd`
}  # fmt: skip
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash", "fish"}
# Long options of the shells that take the next word (bash's start-up files).
_SHELL_VALUES = {"--rcfile", "--init-file"}
FIND_EXEC = {"-exec", "-execdir", "-ok", "-okdir"}
FIND_WRITES = {"-fprint", "-fprint0", "-fprintf", "-fls"}
# git's options before the subcommand; those in the first set take the next word as value.
_GIT_VALUES = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"}


def unwrap(name: str, args: tuple[str, ...] | list[str]) -> list[str] | None:
    """The command a wrapper runs, or None when it runs none."""
    if name == "cmake":
        return cmake_command(args)
    spec = WRAPPERS[name]
    i, skip = 0, spec.skip
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if name == "env" and (arg == "-" or ("=" in arg and not arg.startswith("-"))):
            i += 1  # `env - cmd` is `env -i cmd`: an empty environment, not a program `-`
            continue
        if arg.startswith("-") and arg != "-":
            i += 2 if long_option(arg, spec.values) in spec.values else 1
            continue
        if name == "timeout" and (i == 0 or (_is_duration(arg) and i <= 2)):
            i += 1
            continue
        if skip:
            skip -= 1
            i += 1
            continue
        break
    rest = list(args[i:])
    while skip and rest:  # ``chroot -- /new cmd``: the operand after ``--``
        rest, skip = rest[1:], skip - 1
    if name == "timeout" and rest and _is_duration(rest[0]):
        rest = rest[1:]
    return rest or None


def wrapper_script(name: str, args: tuple[str, ...] | list[str]) -> str | None:
    """The shell command line a wrapper runs with ``-c`` (``flock F -c …``, ``script -c …``)."""
    scripts = WRAPPERS[name].scripts if name in WRAPPERS else frozenset()
    letters = {o[1] for o in scripts if len(o) == 2}  # `script -qc …`: flags run together
    for i, arg in enumerate(args):
        clustered = arg[:1] == "-" and arg[1:2] != "-" and arg[-1:] in letters
        key, eq, value = arg.partition("=")
        if (long_option(arg, scripts) in scripts or clustered) and i + 1 < len(args):
            return args[i + 1]
        if eq and key.startswith("--") and long_option(key, scripts) in scripts:
            return value
    return None


def shell_script(args: tuple[str, ...] | list[str]) -> tuple[str, str | None]:
    """What a shell runs: ("script", text) for ``-c TEXT`` (options in any order: ``bash --norc
    -c``, ``sh -ec``, ``sh -c -- TEXT``), ("file", None) for a script file, ("stdin", None)."""
    i, command_mode = 0, False
    while i < len(args):
        arg = args[i]
        if arg in ("--", "-"):
            i += 1
            break
        if arg.startswith("--"):
            i += 2 if arg in _SHELL_VALUES else 1
            continue
        if len(arg) > 1 and arg[0] in "-+":
            letters = arg[1:]
            command_mode = command_mode or (arg[0] == "-" and "c" in letters)
            i += 2 if letters[-1] in "oO" else 1  # -o pipefail, -euo pipefail, -O extglob
            continue
        break
    operands = list(args[i:])
    if command_mode and len(operands) > 1:  # `sh -c 'cp "$@"' sh a b`: $0 is sh, $1 a…
        return "script", _positional(operands[0], operands[1:])
    if command_mode:
        return ("script", operands[0]) if operands else ("script", None)
    if operands and _PIPED_SCRIPT.match(operands[0]):
        return ("stdin", None)  # `bash /dev/stdin <<<…`, `sh <(echo …)`: a pipe is no file
    return ("file", None) if operands else ("stdin", None)


_PARAM = re.compile(r"\$(?:\{([@*]|\d+)\}|([@*\d]))")


def _positional(script: str, words: list[str]) -> str:
    """``script`` with its positional parameters spelled out as the words after it (``$0`` the
    first): before, ``sh -c 'cp "$@"' sh x config/new.yml`` was read as a ``cp`` of one word
    and wrote past a deny rule. Not inside single quotes; ``"$@"`` stays several words."""
    out, quote, i = [], "", 0
    while i < len(script):
        ch = script[i]
        if ch == "\\" and quote != "'":
            out.append(script[i : i + 2])
            i += 2
            continue
        if ch in "'\"" and quote in ("", ch):
            quote = "" if quote else ch
        found = _PARAM.match(script, i) if ch == "$" and quote != "'" else None
        if found is None:
            out.append(ch)
            i += 1
            continue
        key = found.group(1) or found.group(2)
        values = words[1:] if key in "@*" else words[int(key) : int(key) + 1] or [""]
        quoted = [_spelled(v) for v in ([" ".join(values)] if key == "*" and quote else values)]
        out.append(f'"{" ".join(quoted)}"' if quote else " ".join(quoted))
        i = found.end()
    return "".join(out)


def _spelled(word: str) -> str:
    """A word as the script gets it: a literal quoted, one the line computes (``"$F"``,
    ``$(…)``, ``*.yml``) as the line spelled it, so the script's check computes it too."""
    return word if any(c in word for c in "$`*?[") else shlex.quote(word)


# A script "file" that is stdin or a pipe: its text is the line's own, never a file's.
_PIPED_SCRIPT = re.compile(r"^(/dev/stdin|/dev/fd/\d+|/proc/(self|thread-self|\d+)/fd/\d+|<\()")


def find_commands(args: tuple[str, ...] | list[str]) -> list[list[str]]:
    """The commands of ``find``'s ``-exec``/``-execdir``/``-ok``/``-okdir`` clauses."""
    out: list[list[str]] = []
    i = 0
    while i < len(args):
        if args[i] in FIND_EXEC:
            j = i + 1
            while j < len(args) and args[j] not in (";", "+"):
                j += 1
            if j > i + 1:
                out.append(list(args[i + 1 : j]))
            i = j
        i += 1
    return out


def xargs_placeholder(args: tuple[str, ...] | list[str]) -> str | None:
    """The string ``xargs -I X`` (``-iX``, ``--replace[=X]``) replaces with each input line."""
    for i, arg in enumerate(args):
        if arg == "-I" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("-I") and len(arg) > 2:
            return arg[2:]
        if arg in ("-i", "--replace"):
            return "{}"
        if arg.startswith(("-i", "--replace=")):
            return arg.split("=", 1)[1] if arg.startswith("--") else arg[2:]
        if not arg.startswith("-"):
            return None  # the command starts
    return None


XARGS_INPUT = "<arguments from stdin>"


def xargs_words(inner: list[str], mark: str | None) -> list[str]:
    """The command xargs runs: its input in place of each ``-I`` placeholder, or after the
    words (before, ``xargs -I{} cp {} config/x.yml`` was read as a copy to its input)."""
    if mark:
        return [word.replace(mark, XARGS_INPUT) for word in inner]
    return [*inner, XARGS_INPUT]


def find_writes(args: tuple[str, ...] | list[str]) -> list[str]:
    """The files ``find -fprint FILE`` and its kin write."""
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a in FIND_WRITES]


def git_subcommand_form(argv: tuple[str, ...]) -> tuple[str, ...] | None:
    """``git`` with its global options left out (``git -C . -c x=y push`` -> ``git push``), or
    None when there are none (or this is not git)."""
    if not argv or argv[0].rsplit("/", 1)[-1] != "git":
        return None
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in _GIT_VALUES else 1
    return ("git", *argv[i:]) if i > 1 else None


def cd_folder(word: str | None) -> str | None:
    """The folder ``cd WORD`` changes to, None when the line does not say (``cd``, ``cd -``,
    ``cd $X``, a glob)."""
    return None if word is None or word == "-" or any(ch in word for ch in "$`*?[") else word


def folder_options(name: str, argv: tuple[str, ...]) -> list[str]:
    """The folders ``env -C DIR`` (``--chdir``) and ``git -C DIR`` run their command in."""
    if name == "env":
        return [v for _, v in option_values(argv[1:], {"-C", "--chdir"})]
    if name == "git":  # its global options only: `git commit -C HEAD` reuses a message
        ahead = argv[1 : len(argv) - len(git_subcommand_form(argv) or argv) + 1]
        return [v for _, v in option_values(ahead, {"-C"}) if v not in (".", "./")]
    return []


def long_option(word: str, options: Iterable[str]) -> str:
    """``word`` (an option, without its ``=VALUE``) as the long option of ``options`` it names:
    GNU's getopt and git take any unambiguous start (``--checkpoint-act`` is
    ``--checkpoint-action``, ``--max-p`` is ``--max-procs``), so any start of one counts."""
    if not word.startswith("--") or len(word) < 3 or word in options:
        return word
    return next((o for o in sorted(options) if o.startswith("--") and o.startswith(word)), word)


def option_values(args: tuple[str, ...] | list[str], options: set[str]) -> list[tuple[str, str]]:
    """(option, value) for each of ``options`` in ``args``: ``--opt=V``, ``--opt V``, ``-o V``,
    ``-oV``; a long option also by a start of its name (``--exe V``)."""
    out = []
    for i, arg in enumerate(args):
        key, eq, value = arg.partition("=")
        key = long_option(key, options)
        if not eq and key in options and i + 1 < len(args):
            out.append((key, args[i + 1]))
        elif eq and key.startswith("--") and key in options:
            out.append((key, value))
        elif not arg.startswith("--") and arg[:2] in options and len(arg) > 2:
            out.append((arg[:2], arg[2:]))
    return out


def _is_duration(word: str) -> bool:
    return bool(word) and word.rstrip("smhd").replace(".", "", 1).isdigit()


# Variables that make a command run other code or find another program: ``PATH=.:$PATH ls`` runs
# a planted ``./ls``, ``GIT_EXTERNAL_DIFF=./x git diff`` and ``PAGER='sh -c …' git log`` run
# ``x`` under a rule that allows ``git diff *``, ``LD_PRELOAD`` and ``NODE_OPTIONS=--require``
# load code into any program, ``BASH_ENV`` is sourced by every ``bash`` the line starts.
CODE_VARIABLES = {
    "PATH", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND",
    "PAGER", "MANPAGER", "SYSTEMD_PAGER", "LESSOPEN", "LESSCLOSE", "EDITOR", "VISUAL", "BROWSER",
    "SSH_ASKPASS", "SUDO_ASKPASS", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE",
    "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "MAKEFLAGS", "CC", "CXX", "MANOPT",
    # Where a program reads its own config, which may name a program (git's ``~/.gitconfig`` or
    # ``$XDG_CONFIG_HOME/git/config``: ``diff.external``, ``core.fsmonitor``), or options and
    # modules that run one (``--checkpoint-action=exec``, ``-p plugin``, a gconv module).
    "HOME", "XDG_CONFIG_HOME", "ZDOTDIR", "CURL_HOME", "WGETRC", "LESSKEY", "LESSKEYIN",
    "INPUTRC", "GCONV_PATH", "OPENSSL_CONF", "TAR_OPTIONS", "PYTHONWARNINGS", "PYTHONBREAKPOINT",
    "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "MAKEFILES", "MAKE", "GOFLAGS", "RUSTC_WRAPPER",
    "RUSTC", "RUSTFLAGS", "CONFIG_SITE", "DOTNET_STARTUP_HOOKS", "CLASSPATH",
    # bash's own tables of what a name runs: ``BASH_CMDS=([ls]=/bin/rm); ls`` runs ``rm``.
    "BASH_CMDS", "BASH_ALIASES", "BASH_LOADABLES_PATH",
    # rsync's remote shell and daemon connection command, run as ``-e`` runs its value.
    "RSYNC_RSH", "RSYNC_CONNECT_PROG",
}  # fmt: skip
# ``BASH_FUNC_ls%%=() { …; }``: bash defines ``ls`` from it, and runs that for ``ls``.
CODE_VARIABLE_PREFIXES = ("LD_", "DYLD_", "GIT_", "NPM_CONFIG_", "PIP_", "CARGO_", "BASH_FUNC_")
# Built-ins that set the variables named in their words (``read PATH < f``, ``mapfile``…).
SETS_VARIABLES = {"read", "mapfile", "readarray", "getopts"}


def env_reasons(args: tuple[str, ...], inner: list[str] | None) -> list[str]:
    """Why ``env ARGS`` is not understood: ``-S`` splits a string into a command (``env -S
    "rm -rf src"`` leaves no word after it), a variable it sets changes what runs (``env
    PATH=. ls``, ``env LD_PRELOAD=./x.so ls``)."""
    if any(a.startswith(("-S", "--split-string")) or (a[:1] == "-" and a[:2] != "--" and "S" in a)
           for a in args):  # fmt: skip
        return ["env -S splits a string into a command"]
    set_first = args[: len(args) - len(inner)] if inner is not None else ()
    return [f"sets {a.split('=')[0]}, which changes what a command runs" for a in set_first
            if "=" in a and not a.startswith("-") and runs_code(a.split("=")[0])]  # fmt: skip


def set_variables(name: str, argv: tuple[str, ...]) -> list[str]:
    """The words a command may take as names of variables it sets: any of ``read``'s,
    ``mapfile``'s…, the value of ``printf -v``."""
    if name in SETS_VARIABLES:  # `read PATH < f`, `mapfile -t LD_PRELOAD`
        return list(argv[1:])
    if name == "printf":  # `printf -v PATH %s .`
        return [w for flag, w in zip(argv[1:], argv[2:], strict=False) if flag == "-v"]
    return []


def runs_code(variable: str) -> bool:
    """Whether setting ``variable`` may make a command run code the line does not show."""
    variable = variable.split("[", 1)[0]  # `BASH_CMDS[ls]=/bin/rm` sets BASH_CMDS
    name = variable.upper() if variable.upper().startswith("NPM_CONFIG_") else variable
    return name in CODE_VARIABLES or name.startswith(CODE_VARIABLE_PREFIXES)


def glob_name(word: str) -> bool:
    """A command name the shell expands (``/bin/r?``, ``/usr/bin/r[m]``): another program."""
    return word not in ("[", "[[") and any(c in word for c in "*?[")
