"""What a parsed simple command would do that needs a human: reach the network, destroy data, or
touch credentials. The labels drive prompts and the ``ci`` refusals; the sandbox, not this list,
is what actually stops a command that slips past it (``python -c`` opening a socket)."""

from __future__ import annotations

import posixpath
import re

from agent.shell_parse import ParsedCommand, SimpleCommand
from agent.shell_wrappers import git_subcommand_form

NETWORK_COMMANDS = {
    "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "telnet", "ftp",
    "socat", "nmap", "ping", "dig", "nslookup", "host", "http", "https", "aria2c", "gh",
}  # fmt: skip
GIT_NETWORK = {"push", "fetch", "pull", "clone", "ls-remote", "submodule", "remote"}
INSTALLERS = {
    "pip": {"install", "download"},
    "pip3": {"install", "download"},
    "uv": {"add", "sync", "pip"},
    "poetry": {"add", "install", "update"},
    "npm": {"install", "i", "add", "ci", "publish"},
    "npx": None,
    "yarn": {"add", "install"},
    "pnpm": {"add", "install", "i"},
    "gem": {"install"},
    "cargo": {"install", "add", "publish"},
    "go": {"get", "install"},
    "apt": {"install"},
    "apt-get": {"install", "update"},
}
# A recursive or forced rm of the machine, the home folder (any spelling: ``~/``, ``~user``,
# ``"$HOME"``, ``${HOME}/…``), everything here (``*``, ``*/``, ``?*``, ``.``, ``./*``, ``../*``),
# the workspace by its absolute path (``"$PWD"``, ``$(pwd)``) or by way of the folder above it
# (``../proj``: the workspace itself, or what lies outside it).
_RM_FLAG = r"(-[a-zA-Z]*[rRf][a-zA-Z]*|--recursive|--force)"
_RM_HERE = r"[\"']?(\$\{?(PWD|OLDPWD)\b|\$\(\s*pwd\s*\)|`\s*pwd\s*`)\S*|\.\./\S*"
_RM_WIDE = rf"(/\S*|~\S*|[\"']?\$\{{?HOME\b\S*|{_RM_HERE}|(\.\.?/)*[*?][*?/]*|\.\.?/?\*?)"
# a bracket expression matches one character, as ``?`` does: ``[a-z]*`` is ``?*``
_BRACKET = re.compile(r"\[!?\]?[^]/]*\]")
DESTRUCTIVE = [
    re.compile(rf"^rm (.* )?{_RM_FLAG} (.* )?{_RM_WIDE}( |$)"),
    re.compile(r"^rm (.* )?/\S*"),
    re.compile(r"^(sudo|doas|su)( |$)"),
    re.compile(r"^mkfs(\.\w+)?( |$)"),
    re.compile(r"^dd .*\bof=/dev/"),
    re.compile(r"^(shutdown|reboot|halt|poweroff)( |$)"),
    re.compile(r"^git (.* )?reset (.* )?--hard"),
    # the index's (or a tree's) files over the work tree's, edits or not
    re.compile(r"^git checkout-index (.* )?(-[a-zA-Z]*f[a-zA-Z]*|--force)( |$)"),
    re.compile(r"^git read-tree(?=.* (-[a-zA-Z]*u[a-zA-Z]*)( |$))(?=.* --reset( |$))"),
    # any clean but a dry run: `clean.requireForce=false` (`git -c`, or a config git reads)
    # removes the untracked files without `-f`
    re.compile(r"^git clean(?!\S)(?!.* (-[a-zA-Z]*n[a-zA-Z]*|--dry-run)( |$))"),
    # the work tree's edits (the user's too) into refs/stash, or stashes thrown away: a --ci run
    # puts refs/stash back as it found it, and what was stashed is in no patch
    re.compile(r"^git stash( (push|save|drop|clear)\b.*| -.*)?$"),
    re.compile(r"^chmod (.* )?-R [0-7]{3,4} /"),
    re.compile(r"^(chown|chmod) .*( /|~)( |$)"),
]
# find's tests that narrow what ``-delete`` removes; without one it removes everything it walks.
FIND_FILTERS = {
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-lname", "-ilname", "-newer", "-mtime", "-mmin", "-size", "-empty",
}  # fmt: skip
SECRET_PATHS = re.compile(
    r"(~|\$HOME|\$\{HOME\}|/root|/home/[^/ ]+)/\.(ssh|aws|netrc|gnupg|config/gh|docker|kube|git-credentials)"
    r"|/etc/(shadow|gshadow|sudoers)"
)


def command_risk(command: SimpleCommand) -> str | None:
    argv = command.argv
    if not argv:
        return None
    name = command.name
    line = " ".join(argv)
    if SECRET_PATHS.search(line):
        return "secrets"
    git = git_subcommand_form(argv) or argv
    # before the network: a network grant (the user's, in ci too) must not run ``git stash
    # push`` or ``rm -rf * http://x`` as a mere network command
    if _destroys(name, argv, git):
        return "destructive"
    if name in NETWORK_COMMANDS or re.search(r"\b(https?|ftp|ssh|git)://", line):
        return "network"
    if name == "git" and any(a in GIT_NETWORK for a in git[1:3]):
        return "network"
    module_args = argv[2:] if len(argv) > 2 and argv[1] == "-m" else None
    if name.startswith("python") and module_args and module_args[0] in INSTALLERS:
        name, argv = module_args[0], tuple(module_args)
    if name in INSTALLERS:
        verbs = INSTALLERS[name]
        if verbs is None or (len(argv) > 1 and argv[1] in verbs):
            return "network"
    return None


def _destroys(name: str, argv: tuple[str, ...], git: tuple[str, ...]) -> bool:
    if name == "git":
        git = (*git[:2], *map(_whole_option, git[2:]))
    lines = [" ".join([name, *(git if name == "git" else argv)[1:]])]
    if name == "rm":  # each operand also as the path it names: ``src/../*`` is ``*``
        lines.append(" ".join([name, *map(_plain, argv[1:])]))
    if any(p.search(s) for p in DESTRUCTIVE for s in lines) or _wide_find_delete(name, argv):
        return True
    return name == "git" and _discards_edits(git[1:])


# git takes a long option by any unambiguous start (`git reset --har` is `--hard`); those that
# discard edits are read whole from any start of theirs
_GIT_DISCARDING = ("--hard", "--force", "--discard-changes")


def _whole_option(word: str) -> str:
    if word.startswith("--") and len(word) > 2 and "=" not in word:
        return next((o for o in _GIT_DISCARDING if o.startswith(word)), word)
    return word


def _wide_find_delete(name: str, argv: tuple[str, ...]) -> bool:
    """``find . -delete``, ``find ~ -delete``: ``rm -rf`` by another name (a ``-name``-like test
    makes it a clean-up, as ``find . -name '*.pyc' -delete``)."""
    if name != "find" or "-delete" not in argv or _narrowed(argv):
        return False
    starts = []
    for arg in argv[1:]:
        if arg in ("-H", "-L", "-P"):
            continue
        if arg.startswith("-") or arg in ("(", "!", ","):
            break
        starts.append(arg)
    return not starts or any(re.fullmatch(_RM_WIDE, _plain(s)) for s in starts)


def _narrowed(argv: tuple[str, ...]) -> bool:
    """Whether a test narrows what ``find … -delete`` removes: one of ``FIND_FILTERS``, not
    negated (``! -name '*.keep'`` removes all else), not a name pattern that names every file
    (``-name '*'``, ``-regex '.*'``), in a line without ``-o`` (``-name x -o -type f -delete``
    removes every file)."""
    if {"-o", "-or", ","} & set(argv):
        return False
    for i, arg in enumerate(argv):
        if arg not in FIND_FILTERS or argv[i - 1] in ("!", "-not"):
            continue
        value = argv[i + 1] if i + 1 < len(argv) else ""
        every = r"[.*]*" if arg.endswith("regex") else r"[*?/.]*"
        if not (arg in _NAME_TESTS and re.fullmatch(every, value)):
            return True
    return False


_NAME_TESTS = {"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex",
               "-iregex"}  # fmt: skip


def _plain(word: str) -> str:
    """``word`` as the path it names: ``x/..`` and ``.`` folded away (``src/../*`` is ``*``,
    ``src/..`` is ``.``), a bracket expression as the one character it matches (``[a-z]*`` is
    ``?*``). A word the shell computes (``$…``) stays as written."""
    if not word or word.startswith("-") or "$" in word or "`" in word:
        return word
    return posixpath.normpath(_BRACKET.sub("?", word))


# git options that take the next word as their value, where it matters below
_BRANCH_VALUES = {"-b", "-B", "--orphan", "--conflict", "-s", "--source"}
# a word ``git checkout`` takes as a path, not a branch: ``.``, ``./x``, ``:/``, a glob, a name
# with a file's extension (``calc.py``); a branch name of that shape is switched to with
# ``git switch``
_PATH_SHAPED = re.compile(r"^(\.\.?(/.*)?|:.*|.*[*?\[].*|.*\.[A-Za-z][A-Za-z0-9]*)$")


def _discards_edits(args: tuple[str, ...]) -> bool:
    """``git checkout``/``restore``/``switch`` forms that overwrite uncommitted edits in the work
    tree, as ``git reset --hard`` does: ``checkout -- PATH``, ``checkout PATH``, ``checkout -f``,
    ``restore PATH`` (not ``restore --staged`` alone), ``switch -f``/``--discard-changes``.
    ``git checkout BRANCH`` refuses by itself to overwrite an edit, and is left alone."""
    if not args or args[0] not in ("checkout", "restore", "switch"):
        return False
    verb, rest = args[0], args[1:]
    flags: set[str] = set()
    words: list[str] = []
    skip = False
    for i, arg in enumerate(rest):
        if skip:
            skip = False
        elif arg == "--":
            return verb != "switch" and (verb == "checkout" or "W" in flags or "S" not in flags)
        elif arg.startswith("--"):
            key = arg.split("=", 1)[0]
            flags.add({"--force": "f", "--worktree": "W", "--staged": "S"}.get(key, key))
            skip = key in _BRANCH_VALUES and "=" not in arg and i + 1 < len(rest)
        elif arg.startswith("-") and len(arg) > 1:
            letters = arg[1:]
            for at, letter in enumerate(letters):
                flags.add(letter)
                if f"-{letter}" in _BRANCH_VALUES:
                    skip = at == len(letters) - 1  # ``-b NAME``; ``-bNAME`` holds its value
                    break
        else:
            words.append(arg)
    if verb == "switch":
        return "f" in flags or "--discard-changes" in flags
    listed = "--pathspec-from-file" in flags  # paths named in a file
    if verb == "restore":
        return (bool(words) or listed) and ("W" in flags or "S" not in flags)
    if "f" in flags or listed:
        return True
    branching = flags & {"b", "B", "--orphan"}
    return not branching and (len(words) > 1 or any(_PATH_SHAPED.match(w) for w in words))


def line_risk(parsed: ParsedCommand) -> str | None:
    """The most serious risk of any simple command in the line."""
    risks = {command_risk(c) for c in parsed.commands} - {None}
    for label in ("secrets", "destructive", "network"):
        if label in risks:
            return label
    return None
