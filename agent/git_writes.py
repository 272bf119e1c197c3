"""Files git commands write that their words name only as a folder or a prefix: a new
repository or work tree (``git clone SRC DIR``, ``git init DIR``, ``git worktree add DIR``,
``git submodule add URL DIR``), ``git bundle create FILE``, the config file ``git config KEY VALUE`` (``--unset``, ``set``…)
changes (``.git/config``, ``--global``'s ``~/.gitconfig``, ``--file F``), the patches ``git format-patch -o
DIR`` writes, every tracked file ``git checkout-index --prefix=DIR/`` writes, and whatever a git
command writes in the work tree ``git --work-tree=DIR`` names. The files inside are the
repository's, which the check does not list: each folder is met as a pattern of any name
(``agent.made_names``). Before, each of these wrote past a ``Write(config/*.yml)`` deny rule
in ``yolo``.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from agent.made_names import Made
from agent.shell_wrappers import git_subcommand_form, long_option

# Options of these subcommands that take the next word as their value.
_VALUES = {
    "clone": {"-o", "--origin", "-b", "--branch", "-u", "--upload-pack", "--reference",
              "--reference-if-able", "--depth", "--shallow-since", "--shallow-exclude", "-c",
              "--config", "--separate-git-dir", "--template", "-j", "--jobs", "--filter",
              "--server-option", "--bundle-uri", "--ref-format"},
    "init": {"--template", "--separate-git-dir", "-b", "--initial-branch", "--shared",
             "--object-format", "--ref-format"},
    "worktree": {"-b", "-B", "--reason"},
    "submodule": {"-b", "--branch", "--name", "--reference", "--depth"},
    "bundle": set(),
    "format-patch": {"-o", "--output-directory", "--suffix", "-v", "--reroll-count",
                     "--subject-prefix", "--in-reply-to", "--to", "--cc", "--from",
                     "--signature", "--signature-file", "--base", "--interdiff",
                     "--range-diff", "--creation-factor", "--add-header", "--filename-max-length",
                     "--start-number", "--cover-from-description"},
    "checkout-index": {"--prefix", "--stage"},
}  # fmt: skip


def git_writes(argv: tuple[str, ...]) -> tuple[list[str], list[Made]]:
    """(files written, folders of names the check cannot list) of one ``git`` command."""
    form = git_subcommand_form(argv) or argv
    ahead = argv[1 : len(argv) - len(form) + 1]  # git's global options
    made = [Made(f"{tree.rstrip('/')}/", unlisted=True) for tree in _work_trees(ahead)]
    sub, args = (form[1], list(form[2:])) if len(form) > 1 else ("", [])
    if sub == "config":
        return config_writes(args), made
    if sub in _PATHSPEC_WRITES:  # `git rm F`, `git checkout -- F`, `git restore F`, `git clean`
        return _pathspec_writes(sub, args, made)
    if sub not in _VALUES:
        return [], made
    operands, values = _parse(args, _VALUES[sub])
    if sub == "worktree":
        operands = operands[1:] if operands[:1] == ["add"] else []
    if sub == "submodule":
        operands = operands[2:3] if operands[:1] == ["add"] else []
    if sub == "clone":  # `git clone SRC [DIR]`: DIR, or SRC's name without `.git`
        name = PurePosixPath(operands[0].rstrip("/")).name if operands else ""
        operands = operands[1:2] or [name.removesuffix(".git")] if name else operands[1:2]
    if sub == "bundle":
        return (operands[1:2] if operands[:1] == ["create"] else []), made
    if sub == "format-patch":
        folder = values.get("-o", values.get("--output-directory"))
        return [], made + ([Made(f"{folder.rstrip('/')}/", ".patch", unlisted=True)]
                           if folder else [])  # fmt: skip
    if sub == "checkout-index":  # `--prefix=DIR/`: each tracked file (or those named) there
        prefix = values.get("--prefix")
        if prefix is None:
            return [], made
        if "-a" in args or "--all" in args or "--stdin" in args:
            return [], [*made, Made(prefix, unlisted=True)]
        return [prefix + o for o in operands], made
    return operands[:1], made + [Made(f"{o.rstrip('/')}/", unlisted=True) for o in operands[:1]]


# `git config`'s options that take a value, those that only read, and those that write.
_CONFIG_VALUES = {"-f", "--file", "--blob", "--type", "--default", "--comment", "--value", "--url"}
_CONFIG_READS = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list",
                 "--get-color", "--get-colorbool"}  # fmt: skip
_CONFIG_WRITES = {"--add", "--replace-all", "--unset", "--unset-all", "--rename-section",
                  "--remove-section", "-e", "--edit"}  # fmt: skip
_CONFIG_FILES = {"--global": ["~/.gitconfig", "~/.config/git/config"],
                 "--system": ["/etc/gitconfig"], "--worktree": [".git/config.worktree"]}  # fmt: skip


def config_writes(args: list[str]) -> list[str]:
    """The file ``git config ARGS`` changes: none for a read (``--get``, ``-l``, one key, the
    ``get``/``list`` subcommands), else ``--file F``, the user's or the system's config
    (``--global``, ``--system``), or the repository's ``.git/config``."""
    known = [*_CONFIG_VALUES, *_CONFIG_READS, *_CONFIG_WRITES, *_CONFIG_FILES, "--local"]
    words = [long_option(w.partition("=")[0], known) + w[len(w.partition("=")[0]) :]
             if w.startswith("--") else w for w in args]  # fmt: skip
    operands, values = _parse(words, _CONFIG_VALUES)
    flags = {w.partition("=")[0] for w in words if w.startswith("-")}
    if operands[:1] in (["get"], ["list"]) or flags & _CONFIG_READS or "--blob" in values:
        return []
    sub = operands[:1] in (["set"], ["unset"], ["rename-section"], ["remove-section"], ["edit"])
    if not sub and not flags & _CONFIG_WRITES and len(operands) < 2:
        return []  # `git config user.name`: a read
    file = values.get("-f", values.get("--file"))
    if file is not None:
        return [file]
    scope = next((f for f in _CONFIG_FILES if f in flags), None)
    return _CONFIG_FILES[scope] if scope else [".git/config"]


# Subcommands that change or remove the work tree's files their pathspecs name, with their
# options that take a value.
_PATHSPEC_WRITES = {
    "rm": {"--pathspec-from-file"},
    "checkout": {"-b", "-B", "--orphan", "--conflict", "--pathspec-from-file"},
    "restore": {"-s", "--source", "--conflict", "--pathspec-from-file"},
    "clean": {"-e", "--exclude"},
}


def _pathspec_writes(sub: str, args: list[str], made: list[Made]) -> tuple[list[str], list[Made]]:
    """The files ``git rm``, ``checkout``, ``restore`` and ``clean`` change or remove: each
    pathspec (a folder's files with it, which the deny rules' folder reading covers); a pathspec
    from a file, or none for ``clean``, is any name. ``git checkout BRANCH`` switching branches
    is not read (its operand is met as a path too)."""
    operands, values = _parse(args, _PATHSPEC_WRITES[sub])
    flags = set(args[: args.index("--")] if "--" in args else args)
    if (sub == "rm" and "--cached" in flags) or (sub == "clean" and flags & {"-n", "--dry-run"}):
        return [], made
    if sub == "restore" and flags & {"-S", "--staged"} and not flags & {"-W", "--worktree"}:
        return [], made
    if sub == "checkout" and "--" in args:
        operands = args[args.index("--") + 1 :]
    if "--pathspec-from-file" in values or (sub == "clean" and not operands):
        return operands, [*made, Made("", unlisted=True)]
    return operands, made


def _work_trees(ahead: tuple[str, ...]) -> list[str]:
    out = []
    for i, word in enumerate(ahead):
        key, eq, value = word.partition("=")
        if long_option(key, {"--work-tree"}) == "--work-tree":
            out += [value] if eq else list(ahead[i + 1 : i + 2])
    return [tree for tree in out if tree not in (".", "./")]


def _parse(args: list[str], valued: set[str]) -> tuple[list[str], dict[str, str]]:
    operands: list[str] = []
    values: dict[str, str] = {}
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return operands + args[i + 1 :], values
        key, eq, value = word.partition("=")
        key = long_option(key, valued) if word.startswith("--") else key
        if key in valued and word.startswith("--") and eq:
            values[key] = value
        elif word in valued or key in valued and not eq:
            values[key] = args[i + 1] if i + 1 < len(args) else ""
            i += 1
        elif word.startswith("-") and word[:2] in valued and len(word) > 2:
            values[word[:2]] = word[2:]
        elif not word.startswith("-"):
            operands.append(word)
        i += 1
    return operands, values
