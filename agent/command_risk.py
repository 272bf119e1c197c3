"""What a parsed simple command would do that needs a human: reach the network, destroy data, or
touch credentials. The labels drive prompts and the ``ci`` refusals; the sandbox, not this list,
is what actually stops a command that slips past it (``python -c`` opening a socket)."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable

from agent.shell_parse import ParsedCommand, SimpleCommand
from agent.shell_wrappers import SHELLS, WRAPPERS, git_subcommand_form
from agent.shell_writes import rsync_remote
from kiln_errors.shown import shown

# (git's options before the verb, the verb) -> the alias's value; None for a git command, ""
# for neither (``agent.git_revision.alias``)
Alias = Callable[[tuple[str, ...], str], str | None]
# characters of a refused command named in ci mode's reason (the summary posted on a pull request)
REFUSAL_SHOWN = 120
# how many aliases deep an alias is followed (git follows a chain until it loops)
MAX_ALIASES = 5

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


def command_risk(
    command: SimpleCommand,
    revision: Callable[[str], bool] | None = None,
    alias: Alias | None = None,
    alone: bool = True,
    depth: int = 0,
) -> str | None:
    """The risk label ("network", "destructive", "secrets") or None. ``revision`` says whether git resolves a
    word as a revision of the workspace's repository (``agent.git_revision``): without it, a
    ``git checkout NAME`` is taken for a path, as git takes it when no such revision exists.
    ``alias`` says what a git verb that is no git command runs (``git co``): its expansion is
    judged as the command; ``alone``: no other command of the line could change it first."""
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
    if _destroys(name, argv, git, revision):
        return "destructive"
    if name == "git" and alias is not None and len(git) > 1:  # ``git co``: what it runs
        ahead = argv[1 : len(argv) - len(git) + 1]  # git's options before its subcommand
        risk = _alias_risk(ahead, git, revision, alias, alone, depth)
        if risk is not None:
            return risk
    remote = name != "rsync" or rsync_remote(argv)  # rsync between two local paths: a copy
    if (name in NETWORK_COMMANDS and remote) or re.search(r"\b(https?|ftp|ssh|git)://", line):
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


def _destroys(
    name: str,
    argv: tuple[str, ...],
    git: tuple[str, ...],
    revision: Callable[[str], bool] | None,
) -> bool:
    lines = [" ".join([name, *(git if name == "git" else argv)[1:]])]
    if name == "rm":  # each operand also as the path it names: ``src/../*`` is ``*``
        lines.append(" ".join([name, *map(_plain, argv[1:])]))
    if any(p.search(s) for p in DESTRUCTIVE for s in lines) or _wide_find_delete(name, argv):
        return True
    if name != "git":
        return False
    ahead = argv[1 : len(argv) - len(git) + 1]  # git's options before its subcommand
    return _discards_edits(git[1:], None if _elsewhere(ahead) else revision)


def _alias_risk(
    ahead: tuple[str, ...],
    git: tuple[str, ...],
    revision: Callable[[str], bool] | None,
    alias: Alias,
    alone: bool,
    depth: int,
) -> str | None:
    """The risk of what a git alias runs: ``git co Makefile`` with ``alias.co = checkout`` is
    ``git checkout Makefile``. Refused as destructive: a ``!`` (shell) alias, a chain deeper than
    ``MAX_ALIASES`` (a loop), a value from the environment (``--config-env``), and a verb that
    is no git command in a line with other commands (one of them could write the alias first)."""
    value = alias(ahead, git[1])
    if value is None:
        return None  # one of git's own commands
    if not alone or any(a.startswith("--config-env") for a in ahead):
        return "destructive"
    if not value:
        return None  # neither a command nor an alias: git stops
    try:
        words = shlex.split(value)
    except ValueError:
        return "destructive"
    if value.startswith("!") or depth >= MAX_ALIASES or not words:
        return "destructive"
    expanded = SimpleCommand(("git", *ahead, *words, *git[2:]))
    return command_risk(expanded, revision, alias, alone, depth + 1)


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
# a word ``git checkout`` takes as a path whatever refs exist: ``.``, ``./x``, ``:/``, a glob, a
# name with a file's extension (``calc.py``); any other word is a path unless git resolves it
# as a revision (``Makefile``), asked through ``revision``
_PATH_SHAPED = re.compile(r"^(\.\.?(/.*)?|:.*|.*[*?\[].*|.*\.[A-Za-z][A-Za-z0-9]*)$")
# each verb's long options that matter here: git takes any unique prefix of one (``--har``,
# ``--forc``), so a prefix counts as the option
_LONG = {
    "checkout": ("--force", "--pathspec-from-file", "--orphan", "--conflict", "--patch"),
    "restore": ("--worktree", "--staged", "--source", "--pathspec-from-file", "--patch"),
    "switch": ("--force", "--discard-changes", "--orphan", "--conflict"),
    "checkout-index": ("--force",),
    "read-tree": ("--reset",),
    "reset": ("--hard", "--merge"),
    "clean": ("--dry-run", "--force", "--exclude"),
    "rm": ("--force", "--cached", "--dry-run"),
    "mv": ("--force", "--dry-run"),
    "worktree": ("--force",),
}
_LETTERS = {"--force": "f", "--worktree": "W", "--staged": "S", "--patch": "p", "--dry-run": "n"}
_CLEAN_VALUES = {"-e", "--exclude"}
# git's options before the subcommand that point it at another repository or work tree: there
# the workspace's refs say nothing of what a name is
_ELSEWHERE = {"-C", "--git-dir", "--work-tree"}


def _elsewhere(ahead: tuple[str, ...]) -> bool:
    """git's global options point it at another folder than this one (``-C sub``)."""
    for i, arg in enumerate(ahead):
        key, eq, value = arg.partition("=")
        if key in _ELSEWHERE:
            value = value if eq else (ahead[i + 1] if i + 1 < len(ahead) else "")
            if value not in (".", "./"):
                return True
    return False


def _split(verb: str, rest: tuple[str, ...]) -> tuple[set[str], list[str], bool]:
    """A git subcommand's flags (short ones as letters, ``--force`` as ``f``, a long one given
    by a prefix as the whole; ``--no-NAME``, or a prefix of it, takes NAME back as git does:
    ``git clean -n --no-dry-run -f`` cleans), its other words, and whether a ``--`` ends the
    options (what follows it is paths, not counted)."""
    values = _CLEAN_VALUES if verb == "clean" else _BRANCH_VALUES
    flags: set[str] = set()
    words: list[str] = []
    skip = False
    for i, arg in enumerate(rest):
        if skip:
            skip = False
        elif arg == "--":
            return flags, words, True
        elif arg.startswith("--no-") and len(arg) > 5:  # ``--no-dry-run`` undoes ``-n``
            key = "--" + arg[5:].split("=", 1)[0]
            for name in [o for o in _LONG[verb] if o.startswith(key)]:
                flags -= {name, _LETTERS.get(name, name)}
        elif arg.startswith("--"):
            key = arg.split("=", 1)[0]
            named = [o for o in _LONG[verb] if o.startswith(key)] if len(key) > 2 else []
            key = named[0] if len(named) == 1 else key
            for name in named or [key]:  # an ambiguous prefix, which git refuses: each
                flags.add(_LETTERS.get(name, name))
            skip = key in values and "=" not in arg and i + 1 < len(rest)
        elif arg.startswith("-") and len(arg) > 1:
            letters = arg[1:]
            for at, letter in enumerate(letters):
                flags.add(letter)
                if f"-{letter}" in values:
                    skip = at == len(letters) - 1  # ``-b NAME``; ``-bNAME`` holds its value
                    break
        else:
            words.append(arg)
    return flags, words, False


def _discards_edits(args: tuple[str, ...], revision: Callable[[str], bool] | None) -> bool:
    """git forms that overwrite uncommitted edits in the work tree: ``reset --hard``,
    ``checkout -- PATH``, ``checkout PATH`` (any word git would not resolve as a revision:
    ``revision`` asks it; without one every such word is a path), ``checkout -f``, ``restore
    PATH`` (not ``restore --staged`` alone), ``checkout -p`` and ``restore -p`` (hunk by hunk,
    the answers from stdin), ``switch -f``/``--discard-changes``,
    ``checkout-index -f``, ``read-tree --reset -u``, ``reset --merge`` (it drops staged edits),
    ``clean`` but ``clean -n``, ``rm -f`` but with ``--cached`` or ``-n`` (without ``-f``, git
    refuses to remove an edited file), ``mv -f`` but with ``-n`` (it replaces the file moved over),
    ``worktree remove`` (a linked worktree's files: with ``-f`` its edits and untracked files,
    without it the ignored ones, the user's ``.env``, as ``clean -X`` removes them).
    ``git checkout BRANCH`` and ``git reset --keep`` refuse by themselves to overwrite an edit,
    and are left alone."""
    if not args or args[0] not in _LONG:
        return False
    verb = args[0]
    flags, words, dashed = _split(verb, args[1:])
    if verb == "clean":  # without -f too: ``-c clean.requireForce=false``, or the repo's config
        return not flags & {"n", "--dry-run"}
    if verb == "rm":
        return "f" in flags and not flags & {"--cached", "n", "--dry-run"}
    if verb == "mv":  # over an existing file, its edit and all
        return "f" in flags and not flags & {"n", "--dry-run"}
    if verb == "checkout-index":
        return "f" in flags
    if verb == "read-tree":
        return "--reset" in flags and "u" in flags
    if verb == "reset":
        return "--hard" in flags or "--merge" in flags
    if verb == "switch":
        return "f" in flags or "--discard-changes" in flags
    if verb == "worktree":  # its files: with -f edits and untracked ones, without the ignored
        return words[:1] == ["remove"]
    listed = "--pathspec-from-file" in flags  # paths named in a file
    # ``-p`` asks hunk by hunk whether to throw the edit away, reading the answers from stdin:
    # ``yes | git checkout -p`` throws every hunk away, with no path named
    hunks = "p" in flags
    if verb == "restore":
        return (bool(words) or listed or dashed or hunks) and ("W" in flags or "S" not in flags)
    if dashed or "f" in flags or listed or hunks:
        return True
    if flags & {"b", "B", "--orphan"} or not words:
        return False
    if len(words) > 1 or _PATH_SHAPED.match(words[0]):
        return True
    return revision is None or not revision(words[0])


def line_risk(
    parsed: ParsedCommand,
    revision: Callable[[str], bool] | None = None,
    alias: Alias | None = None,
) -> str | None:
    """The most serious risk of any simple command in the line (``revision``, ``alias``: as for
    ``command_risk``; a line that changes folder moves git away from the workspace's refs and
    config, and another command of the line may delete a branch before git reads it:
    ``git branch -D Makefile && git checkout Makefile`` checks out the file). The commands that
    only run another (``timeout``, ``sh -c``) do not count as others."""
    runs = [c for c in parsed.commands if c.name not in WRAPPERS and c.name not in SHELLS]
    alone = len(runs) <= 1 and not parsed.cd
    known = revision if alone else None
    risks = {command_risk(c, known, alias, alone) for c in parsed.commands} - {None}
    for label in ("secrets", "destructive", "network"):
        if label in risks:
            return label
    return None


def ci_refusal(risk: str, command: str) -> str:
    """Why ci mode refuses ``command``, naming it for the reader of the summary: one printable
    line of whole words up to ``REFUSAL_SHOWN`` characters, "…" for the rest. Whole words, as
    a token cut in two would lose the shape the outputs redact (``lsp_server.headless``)."""
    kept: list[str] = []
    for word in command.split():
        if len(" ".join([*kept, word])) > REFUSAL_SHOWN:
            kept.append("…")
            break
        kept.append(word)
    return f"{risk} commands are not allowed in ci mode: {shown(' '.join(kept), 2 * REFUSAL_SHOWN)}"
