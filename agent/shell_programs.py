"""Programs that run a command line named in their own options, and how to find it.

A deny rule on ``rm`` must meet it where a program runs it for the line: tar's
``--checkpoint-action=exec=rm …``, ``git rebase --exec``, ``git grep --open-files-in-pager``,
``git archive --exec``, ripgrep's ``--pre``, sort's ``--compress-program``, zip's ``-TT``,
``man -P``/``--pager``/``--html``, ``split --filter``, awk's ``system()``, an editor's ``!CMD``, a
``git -c`` key naming a program, a sed script's ``e``. Where such a program takes a word the
shell computes, or a pattern that a checkout's file named ``--to-command=…`` can fill, the check
cannot tell what it runs (``OPTION_RUNNERS``, read by ``agent.shell_eval``).
"""

from __future__ import annotations

import re
import shlex

from agent.shell_wrappers import git_subcommand_form, option_values

# tar's options whose value is a command line it runs through the shell (``exec=`` for
# ``--checkpoint-action``), like find's ``-exec``.
_TAR_SCRIPTS = {"--to-command", "--use-compress-program", "-I", "--info-script", "-F",
                "--new-volume-script", "--rsh-command", "--checkpoint-action"}  # fmt: skip
# git config keys whose value names a program git runs (or more config, or a subcommand's
# meaning): set with ``-c`` on the line, they run what the line does not show.
_GIT_CODE_KEYS = re.compile(
    r"(alias|pager|filter|difftool|mergetool|include|includeif|uploadpack|receive|browser|man"
    r"|sendemail|credential)\..*|core\.(fsmonitor|pager|editor|hookspath|sshcommand|askpass"
    r"|gitproxy|alternaterefscommand|worktree)|sequence\.editor|diff\.(external|.*\.(command"
    r"|textconv))|merge\..*\.driver|gpg\.(.*\.)?program|protocol\..*|remote\..*\.(uploadpack"
    r"|receivepack)|interactive\.difffilter|web\.browser|ssh\.variant|gpg\.ssh\.defaultkeycommand"
    r"|trace2\..*",  # trace2's targets: files git writes
    re.IGNORECASE,
)


def program_scripts(argv: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(command lines a program runs from its own options, why others cannot be read): tar's
    ``--checkpoint-action=exec=CMD``, ``--to-command``, ``-I``; ``git rebase --exec``,
    ``git submodule foreach``, ``git bisect run``; a ``git -c`` key that names a program; a sed
    script that writes or runs (``w``, ``e``)."""
    name = argv[0].rsplit("/", 1)[-1] if argv else ""
    scripts: list[str] = []
    if name in ("tar", "gtar", "bsdtar"):
        for key, value in option_values(argv[1:], _TAR_SCRIPTS):
            if key != "--checkpoint-action":
                scripts.append(value)
            elif value.startswith("exec="):
                scripts.append(value[len("exec=") :])
        return scripts, []
    if name == "sed":
        return [], _sed_problems(argv[1:])
    if name == "man":
        return _man_lines(argv[1:])
    if name == "split":  # `split --filter=CMD`: CMD reads each part, named in $FILE
        return [v for _, v in option_values(argv[1:], {"--filter"})], []
    if name == "csplit":  # `-b '%02d/../x'`: names in other folders than the prefix's
        formats = option_values(argv[1:], {"-b", "--suffix-format"})
        return [], ["csplit -b names files in other folders" for _, v in formats if "/" in v]
    if name in _AWKS:  # `awk 'BEGIN{system("rm -rf src")}'`, `print | "sh"`, `"cmd" | getline`
        program = _awk_program(argv[1:])
        if program is None or re.search(r"\bsystem\s*\(|(?<!\|)\|(?!\|)", program):
            return [], [f"{name} runs a command line from its program, or reads it from a file"]
        if None in awk_outputs(program):
            return [], [f"{name} prints to a file its program computes"]
        return [], []
    if name in _EDITORS:  # `ex -s -c '!rm -rf src'`, `ed F < script`: `!CMD` runs CMD
        return [], [f"{name} runs the commands of a script the check does not read"]
    if name == "strace":  # `strace -o '|CMD' ls` pipes its trace to CMD, through the shell
        piped = [v[1:] for _, v in option_values(argv[1:], {"-o", "--output"}) if v[:1] in "|!"]
        return [v for v in piped if v], []
    if name == "rsync":  # `rsync -e CMD SRC host:DEST` runs `CMD host rsync --server …`
        return [f"{v} HOST rsync --server" for v in _rsync_shells(argv[1:])], []
    if name in _OPTION_PROGRAMS:  # `rg --pre CMD`: CMD FILE for each file it searches
        for _, value in option_values(argv[1:], set(_OPTION_PROGRAMS[name])):
            scripts.append(shlex.join([value, "<file>"]))
        return scripts, []
    if name in _OPTION_LINES:  # `zip -TT CMD`: a command line
        return [f"{v} <file>" for _, v in option_values(argv[1:], set(_OPTION_LINES[name]))], []
    if name in ("tmux", "screen", "byobu", "parallel", "sem"):  # a command line in any word
        # Not understood; still, for the deny rules, each word read as a line and each run of
        # words as a command (`parallel rm ::: src`, `tmux new -d 'rm -rf src'`).
        words = [w for w in argv[1:21] if w != ":::"]
        tries = [*words, *(shlex.join(words[i:]) for i in range(len(words)) if words[i][:1] != "-")]
        return tries, [f"{name} runs commands the check does not read"]
    if name != "git":
        return [], []
    why = [f"git {k} {code} runs a program the line does not show"
           for k, v in option_values(_git_globals(argv), {"-c", "--config-env"})
           if (code := _code_key(v))]  # fmt: skip
    if any(a.startswith("--exec-path") for a in _git_globals(argv)):
        why.append("git --exec-path runs subcommands from another folder")
    why += [f"git {a} takes the config of another git folder, which can name programs"
            for a in _foreign_git_dirs(_git_globals(argv))]  # fmt: skip
    sub = list((git_subcommand_form(argv) or argv)[1:])
    for option in _GIT_OPTION_LINES.get(sub[0] if sub else "", ()):  # `git grep -O CMD`
        scripts += [f"{v} <file>" for k, v in option_values(sub[1:], {option}) if k == option]
    if sub[:1] == ["rebase"]:
        scripts += [v for _, v in option_values(sub[1:], {"-x", "--exec"})]
    elif sub[:2] == ["submodule", "foreach"]:
        rest = [a for a in sub[2:] if not a.startswith("--")]
        scripts += [" ".join(rest)] if rest else []
    elif sub[:2] == ["bisect", "run"]:
        scripts += [shlex.join(sub[2:])] if sub[2:] else []
    elif sub[:1] == ["difftool"]:
        scripts += [v for _, v in option_values(sub[1:], {"-x", "--extcmd"})]
    elif sub[:1] == ["filter-branch"]:
        why.append("git filter-branch runs its filters")
    return scripts, why


_AWKS = {"awk", "gawk", "mawk", "nawk", "busybox-awk"}
_EDITORS = {"ed", "red", "ex", "vi", "vim", "nvim", "view", "vimdiff", "gvim", "nano", "emacs"}


def awk_writes(args: tuple[str, ...] | list[str]) -> list[str]:
    """The files an awk program's ``print > "FILE"`` statements write."""
    program = _awk_program(tuple(args)) or ""
    return [t for t in awk_outputs(program) if t is not None]


# After one of these (or at the start) a `/` opens a regular expression, not a division.
_REGEX_BEFORE = set("(,~!{};&|=?:\n") | {"", "print", "printf", "return", "in"}


def awk_outputs(program: str) -> list[str | None]:
    """Where the program's ``print``/``printf`` statements send their output: the FILE of
    each ``> "FILE"`` or ``>> "FILE"``, None for one it computes. A ``>`` inside parentheses
    opened in the statement compares (``print ($1 > 5)``); strings (``print "a;b" > "F"``)
    and regular expressions are read as awk reads them, so a ``;`` or ``}`` inside one no
    longer hides the redirection. A program the scan cannot finish counts as computed."""
    out: list[str | None] = []
    depth, printing, prev, i = 0, None, "", 0
    while i < len(program):
        ch = program[i]
        if ch == '"' or (ch == "/" and prev in _REGEX_BEFORE):  # a string or a regex: skip
            end = _literal_end(program, i)
            if end is None:
                return [*out, None]
            if printing is not None and prev == ">":
                out.append(program[i + 1 : end] if ch == '"' else None)
                printing = None
            i, prev = end + 1, "x"
            continue
        if ch.isalnum() or ch == "_":
            word = re.match(r"\w+", program[i:])
            assert word is not None
            if printing is not None and prev == ">":
                out.append(None)  # `print > name`: a file named by a variable
                printing = None
            prev = word.group(0)
            printing = depth if prev in ("print", "printf") else printing
            i += len(prev)
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch in ";\n{}" and (printing is None or depth <= printing):
            printing = None
        elif ch == ">" and printing is not None and depth == printing and prev != ">":
            prev = ">"
            i += 2 if program[i + 1 : i + 2] == ">" else 1
            continue
        if printing is not None and prev == ">" and not ch.isspace():
            out.append(None)  # `print > $2`, `print > (x ".txt")`
            printing = None
        if not ch.isspace():
            prev = ch if ch != ">" else ">="  # a comparison: no file follows
        i += 1
    return out


def _literal_end(program: str, start: int) -> int | None:
    """Where the string or regular expression opened at ``start`` closes (escapes and, in a
    regular expression, bracket classes read), or None."""
    close, i, in_class = program[start], start + 1, False
    while i < len(program):
        ch = program[i]
        if ch == "\\":
            i += 2
            continue
        if close == "/" and ch == "[":
            in_class = True
        elif close == "/" and ch == "]":
            in_class = False
        elif ch == close and not in_class:
            return i
        elif ch == "\n":
            return None
        i += 1
    return None


def _awk_program(args: tuple[str, ...]) -> str | None:
    """awk's program text: the first operand (after ``-v X=Y``, ``-F S``), or None when it
    comes from a file (``-f``, ``-E``, ``--file``, ``-i`` an include)."""
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return args[i + 1] if i + 1 < len(args) else ""
        if word[:2] in ("-f", "-E", "-i") or word.startswith(("--file", "--exec", "--include")):
            return None
        if word in ("-e", "--source") or word.startswith("--source="):  # gawk's program text
            return word.partition("=")[2] or (args[i + 1] if i + 1 < len(args) else "")
        if word in ("-v", "-F", "--assign", "--field-separator"):
            i += 2
            continue
        if not word.startswith("-"):
            return word
        i += 1
    return ""


def _rsync_shells(args: tuple[str, ...]) -> list[str]:
    """rsync's ``-e CMD``/``--rsh=CMD`` (also last in a bundle, ``-avze CMD``)."""
    out = [v for k, v in option_values(args, {"--rsh"}) if k == "--rsh"]
    for i, arg in enumerate(args):
        if arg == "--":
            break
        for j, letter in enumerate(arg[1:] if arg[:1] == "-" and arg[:2] != "--" else "", 1):
            if letter in "fTBM":  # options whose value is the rest of the word or the next
                break
            if letter == "e":
                value = arg[j + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
                out.append(value)
                break
    return out


def _code_key(spec: str) -> str | None:
    """The key naming a program that ``git -c KEY=VALUE`` (split at the first ``=``) or
    ``--config-env KEY=VAR`` (at the last) may set: ``--config-env diff.a=b.textconv=X`` sets
    ``diff.a=b.textconv``, a textconv program for files of the attribute ``diff=a=b``."""
    parts = spec.split("=")
    keys = ("=".join(parts[:i]) for i in range(1, len(parts) + 1))
    return next((key for key in keys if _GIT_CODE_KEYS.fullmatch(key)), None)


# In a sed script: an ``s`` or ``y`` command (its text may hold any letter), an address, the
# text of ``a``/``i``/``c``; what is left holds the commands.
_SED_TEXT = re.compile(r"[sy]([^\w\s\\;])(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1|/(?:\\.|[^/])*/"
                       r"|\\(.)(?:\\.|(?!\2).)*\2|[aic]\\?\s.*$", re.MULTILINE)  # fmt: skip
_SED_FLAGS = re.compile(r"s([^\w\s\\;])(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1([a-zA-Z0-9]*)")
_SED_RUNS = re.compile(r"(?:^|[\s;{}!,$\d])[wWe](?:\s|;|$)|^[wWe]")


_SED_S = re.compile(r"s([^\w\s\\;])(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1")
_SED_WRITE = re.compile(r"(?:^|[\s;{}!,$\d\x00])[wW](?=\s|$)|^[wW]")


def sed_writes(args: tuple[str, ...] | list[str]) -> list[str]:
    """The files a sed script's ``w FILE``/``W FILE`` commands and ``s///w FILE`` flags write
    (the rest of the line is the name), for the write rules; the script stays not understood."""
    out = []
    for script in _sed_scripts(tuple(args)):
        for line in script.splitlines():
            for m in _SED_S.finditer(line):  # `s/a/b/gw FILE`
                flags = re.match(r"[gpiImMeE0-9]*w\s*(.*)", line[m.end() :])
                out += [flags.group(1).strip()] if flags else []
            blank = _SED_TEXT.sub(lambda m: "\0" * len(m.group()), line)  # `/w x/`, `a w x`
            out += [line[m.end() :].strip() for m in _SED_WRITE.finditer(blank)]
    return list(dict.fromkeys(name for name in out if name))


def _sed_scripts(args: tuple[str, ...]) -> list[str]:
    scripts = [v for _, v in option_values(args, {"-e", "--expression"})]
    return scripts or [a for a in args if not a.startswith("-")][:1]


def _sed_problems(args: tuple[str, ...]) -> list[str]:
    """GNU sed writes a file with ``w FILE`` (or the ``w`` flag of ``s``) and runs a command with
    ``e``: a script using either is not understood (``sed -i`` is read by ``shell_writes``, the
    files ``w`` writes by ``sed_writes``)."""
    if any(a in ("-f", "--file") or a.startswith("--file=") for a in args):
        return ["sed -f runs a script file the line does not show"]
    for script in _sed_scripts(args):
        if any(set(flags) & set("weW") for _, flags in _SED_FLAGS.findall(script)) or (
            _SED_RUNS.search(_SED_TEXT.sub(" ", script))
        ):
            return ["the sed script writes a file (w) or runs a command (e)"]
    return []


def _git_globals(argv: tuple[str, ...]) -> list[str]:
    form = git_subcommand_form(argv)
    return list(argv[1 : len(argv) - len(form) + 1]) if form else []


# Programs whose option names a program they start on each file (``rg --pre CMD`` runs
# ``CMD FILE``; sort's compressor reads its data), and those whose option is a command line.
_OPTION_PROGRAMS = {"rg": ("--pre",), "sort": ("--compress-program",)}
_OPTION_LINES = {"zip": ("-TT", "--unzip-command")}
# git subcommands' options whose value is a command line git runs (through the shell).
_GIT_OPTION_LINES = {
    "grep": ("-O", "--open-files-in-pager"),
    "archive": ("--exec",),
    "fetch-pack": ("--upload-pack", "--exec"),
    "send-pack": ("--receive-pack", "--exec"),
    "clone": ("-u", "--upload-pack"),
    "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",),
    "ls-remote": ("--upload-pack",),
    "push": ("--receive-pack", "--exec"),
    "send-email": ("--to-cmd", "--cc-cmd", "--header-cmd", "--sendmail-cmd", "--smtp-server"),
    "instaweb": ("-d", "--httpd", "-b", "--browser"),
}
# Programs a word the shell computes (or a pattern such as ``*``) may hand an option that runs a
# command: any such word makes the line not understood (``agent.shell_eval.computed_program``).
OPTION_RUNNERS = {"tar", "gtar", "bsdtar", "sed", "man", "split", *_OPTION_PROGRAMS, *_OPTION_LINES,
                  *_AWKS}  # fmt: skip
GIT_RUNNERS = {"rebase", "submodule", "bisect", "difftool", "filter-branch", *_GIT_OPTION_LINES}


def _foreign_git_dirs(options: list[str]) -> list[str]:
    """``--git-dir=vendor/x`` or ``--bare``: git takes a folder of the checkout shaped like a
    repository (its ``config`` naming ``core.fsmonitor``) as the repository, explicitly, which
    ``safe.bareRepository=explicit`` allows. The workspace's own ``.git`` is the user's."""
    out, i = [], 0
    while i < len(options):
        option = options[i]
        if option == "--bare":
            out.append(option)
        elif option == "--git-dir" or option.startswith("--git-dir="):
            value = (
                option.partition("=")[2] if "=" in option else (options[i + 1 : i + 2] or [""])[0]
            )
            if value.rstrip("/") not in (".git", "./.git"):
                out.append(f"--git-dir={value}")
        i += 1
    return out


# man's short options that take a value (the next word, or the rest of the word), those whose
# value is optional (only the rest of the word: ``-Hfirefox``), and which of them is a program.
_MAN_VALUES, _MAN_OPTIONAL, _MAN_LONG = set("CELmMpPrRSse"), set("HTX"), {"--pager", "--html"}


def _man_lines(args: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """``man -P CMD``/``--pager=CMD`` and ``-HCMD``/``--html=CMD`` run CMD through the shell
    (flags run together too: ``man -aP CMD``); ``-C FILE`` reads a config that names programs."""
    scripts: list[str] = []
    why = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg.startswith("--"):
            key = arg.partition("=")[0]
            if key != "--" and "--config-file".startswith(key) and len(key) > 3:
                why.append("man --config-file reads a config that names programs")
            continue
        for j, letter in enumerate(arg[1:] if arg.startswith("-") else "", 1):
            if letter in _MAN_VALUES | _MAN_OPTIONAL:
                value = arg[j + 1 :] or (
                    args[i + 1] if letter in _MAN_VALUES and i + 1 < len(args) else ""
                )
                if letter in "PH" and value:
                    scripts.append(value)
                if letter == "C":
                    why.append("man -C reads a config that names programs")
                break
    scripts += [v for _, v in option_values(args, _MAN_LONG) if v]
    return scripts, why
