"""Files a simple command writes through its own arguments, not a redirection: the destination
of ``cp``/``mv``/``install``/``ln``/``rsync`` (and what ``mv`` takes away), ``dd of=``, the
files ``sed -i``/``perl -i``/``ruby -i`` rewrite, ``truncate``, ``touch``, ``sort -o``,
``shuf -o``, ``iconv -o``, ``uniq IN OUT``, ``xxd IN OUT``, ``split IN PREFIX``,
``csplit -f PREFIX`` (the later names they make: ``made_by``), ``git … --output=``,
``git config``, ``git archive -o``, ``tar -cf`` and, through ``agent.option_writes``, the
files other programs' options or naming rules write (``strace -o``, ``gunzip F.gz``, ``chmod``).

Best effort by design: a program may write anything (``python -c``, ``7z x``, ``make``), so
these only make the permission check and its prompt truthful for the commands that say in their
words what they write; the sandbox holds the paths it protects whatever writes them
(docs/security.md sections 3 and 4). A copy to an existing folder lands under each source's
name, which only the filesystem can tell: ``Copy`` keeps the sources for ``landing_paths``.
Archives and patches name their files inside: ``agent.unpack_writes``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agent.git_writes import git_writes
from agent.made_names import Made
from agent.option_writes import option_made, option_writes
from agent.rename_writes import RENAMERS, renamed
from agent.shell_programs import sed_writes
from agent.shell_wrappers import git_subcommand_form, long_option
from agent.tree_walk import walk
from agent.unpack_writes import tar_archive


@dataclass(frozen=True)
class Copy:
    """``cp SRC… DEST``: DEST is written, or DEST/NAME for each source if DEST is a folder."""

    dest: str
    sources: tuple[str, ...]
    folder: bool  # known to be a folder (``-t DIR``, a trailing ``/``, several sources)

    def paths(self, is_dir: bool) -> list[str]:
        if not (self.folder or is_dir):
            return [self.dest]
        base = self.dest.rstrip("/") or "/"
        names = [PurePosixPath(s.rstrip("/")).name for s in self.sources]
        return [self.dest, *(f"{base}/{n}" for n in names if n not in ("", ".", ".."))]


# Options that take the next word as their value (short) or after ``=`` or as the next word (long).
_COREUTILS_SHORT = {"-S", "-t"}  # cp, mv, ln, install: backup suffix, target folder
_COREUTILS_LONG = {"--suffix", "--target-directory", "--backup"}
_COPY_VALUES = {
    "cp": (_COREUTILS_SHORT, _COREUTILS_LONG),
    "mv": (_COREUTILS_SHORT, _COREUTILS_LONG),
    "ln": (_COREUTILS_SHORT, _COREUTILS_LONG),
    "install": (
        _COREUTILS_SHORT | {"-m", "-o", "-g"},
        _COREUTILS_LONG | {"--mode", "--owner", "--group", "--strip-program"},
    ),
    "rsync": (
        {"-e", "-f", "-T", "-B", "-M"},
        {
            "--rsh",
            "--filter",
            "--exclude",
            "--include",
            "--exclude-from",
            "--include-from",
            "--files-from",
            "--temp-dir",
            "--backup-dir",
            "--suffix",
            "--chmod",
            "--chown",
            "--log-file",
            "--password-file",
            "--compare-dest",
            "--copy-dest",
            "--link-dest",
            "--partial-dir",
            "--rsync-path",
            "--remote-option",
            "--max-size",
            "--min-size",
            "--timeout",
            "--bwlimit",
            "--usermap",
            "--groupmap",
            "--out-format",
            "--skip-compress",
        },
    ),  # fmt: skip
}


def argument_writes(argv: tuple[str, ...]) -> tuple[list[str], list[Copy]]:
    """(paths written, copies whose destination may be a folder) of one simple command."""
    if not argv:
        return [], []
    name = PurePosixPath(argv[0]).name
    args = list(argv[1:])
    if name in _COPY_VALUES:
        return _copy(name, args)
    if name == "dd":
        return [a[3:] for a in args if a.startswith("of=")], []
    if name == "sed":
        rewritten = _in_place(args, short_values="efl", long_values={
            "--expression", "--file", "--line-length"},
            script_flags=("-e", "-f", "--expression", "--file"))  # fmt: skip
        return rewritten + sed_writes(args), []  # and the files its `w FILE` commands write
    if name in ("perl", "ruby"):  # `-0` and `-l` take digits only: `-0pi` is `-0 -p -i`
        return _in_place(args, short_values="eEIMmxC", long_values=set(),
                         script_flags=("-e", "-E"), digits="0l"), []  # fmt: skip
    if name == "truncate":
        return _operands(args, {"-s", "-r", "--size", "--reference"}), []
    if name == "touch":
        return _operands(args, {"-d", "-t", "-r", "--date", "--reference"}), []
    if name in _OUTPUT_OPTION:  # `sort -uo F`, `shuf -o F`, `iconv -f A -t B -o F`
        values = _split(args, *_OUTPUT_OPTION[name])[1]
        return [v for k, v in values.items() if k in ("-o", "--output")], []
    if name in ("uniq", "xxd"):  # `uniq IN OUT`, `xxd -r IN OUT`: the second operand
        operands = _split(args, *_SECOND_OPERAND[name])[0]
        return operands[-1:] if len(operands) > 1 else [], []
    if name == "split":
        return _split_files(args), []
    if name == "csplit":  # `csplit -f PREFIX IN 3`: PREFIX00, PREFIX01…
        prefix, first = _csplit(args)
        return [prefix, prefix + first], []
    if name in ("tar", "gtar", "bsdtar"):  # `tar -cf F …`: the archive it writes
        return [a for a in [tar_archive(args)] if a is not None], []
    if name == "git":  # `git diff --output=F`, `git config --file F k v`, `git archive -o F`
        args = list((git_subcommand_form(argv) or argv)[1:])  # without `-C DIR`, `-c K=V`
        sub = args[0] if args else ""
        if sub == "mv":  # `git mv SRC DEST`, as `mv`
            return _copy("mv", args[1:])
        if sub in ("clone", "init", "worktree", "submodule", "bundle", "checkout-index", "config",
                   "rm", "checkout", "restore", "clean"):  # fmt: skip
            return git_writes(argv)[0], []  # `git config k v`: .git/config, `--global`'s…
        return _valued(args, "-o" if sub == "archive" else None, "--output"), []
    return option_writes(name, args), []  # `strace -o F`, `gunzip F.gz`, `chmod`…


# Programs whose ``-o``/``--output`` names the file written, with their options that take a value.
_OUTPUT_OPTION = {
    "sort": ({"-o", "-k", "-t", "-S", "-T"},
             {"--output", "--key", "--field-separator", "--buffer-size", "--temporary-directory",
              "--batch-size", "--compress-program", "--files0-from", "--random-source",
              "--parallel", "--sort"}),
    "shuf": ({"-o", "-i", "-n"}, {"--output", "--input-range", "--head-count", "--random-source"}),
    "iconv": ({"-o", "-f", "-t"}, {"--output", "--from-code", "--to-code"}),
}  # fmt: skip
# Programs whose second operand is the file written, with their options that take a value (an
# obsolete ``uniq +N`` or xxd's ``-cols 8`` adds an operand in front: the last one is written).
_SECOND_OPERAND = {
    "uniq": ({"-f", "-s", "-w"}, {"--skip-fields", "--skip-chars", "--check-chars"}),
    "xxd": ({"-c", "-g", "-l", "-o", "-s", "-n"}, set()),
}
_SPLIT_VALUES = (
    {"-a", "-b", "-C", "-l", "-n", "-t"},
    {"--suffix-length", "--bytes", "--line-bytes", "--lines", "--number", "--additional-suffix",
     "--filter", "--separator"},
)  # fmt: skip


_CSPLIT_VALUES = ({"-b", "-f", "-n"}, {"--suffix-format", "--prefix", "--digits"})


def _csplit(args: list[str]) -> tuple[str, str]:
    """csplit's prefix (``xx`` unless ``-f`` says) and the suffix of its first file (``00``,
    the ``-b`` printf format's or ``-n``'s for 0)."""
    values = _split(args, *_CSPLIT_VALUES)[1]
    digits = values.get("-n", values.get("--digits", "2"))
    fmt = values.get("-b", values.get("--suffix-format", f"%0{digits}d"))
    try:
        first = fmt % 0
    except (TypeError, ValueError):
        first = ""
    return values.get("-f", values.get("--prefix", "xx")), first


def made_by(argv: tuple[str, ...]) -> list[Made]:
    """The names ``split`` and ``csplit`` make after a prefix, past the first one
    (``agent.made_names``): ``PREFIX`` + letters or digits + split's ``--additional-suffix``."""
    name = PurePosixPath(argv[0]).name if argv else ""
    if name == "split":
        operands, values = _split(list(argv[1:]), *_SPLIT_VALUES)
        prefix = operands[1] if len(operands) > 1 else "x"
        return [Made(prefix, values.get("--additional-suffix", ""), SPLIT_LETTERS)]
    if name == "git":  # `git clone . DIR`, `git --work-tree=DIR checkout …`
        return git_writes(argv)[1]
    if name == "csplit":  # a `-b` format with a `/` is not understood (``shell_programs``)
        values = _split(list(argv[1:]), *_CSPLIT_VALUES)[1]
        prefix = values.get("-f", values.get("--prefix", "xx"))
        fmt = values.get("-b", values.get("--suffix-format"))
        number = re.fullmatch(r"((?:[^%]|%%)*)%[-+ #0']*[0-9]*(?:\.[0-9]*)?[diouxX]((?:[^%]|%%)*)",
                              fmt or "%d")  # fmt: skip
        if number is None:  # no number, or several: any name
            return [Made(prefix)]
        head, tail = (part.replace("%%", "%") for part in number.groups())
        return [Made(prefix + head, tail, "0123456789abcdefABCDEF -+")]
    if name == "mv":  # `cd .. && mv proj p2` takes every name under proj along: any name there
        return [Made(f"{s.rstrip('/')}/", unlisted=True) for s in argument_writes(argv)[0]]
    made = renamed(name, list(argv[1:]))[1] if name in RENAMERS else []  # `rename EXPR F`
    return made + option_made(name, list(argv[1:]))  # `mktemp DIR/XXXXXX`


SPLIT_LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"


def _split_files(args: list[str]) -> list[str]:
    """``split IN PREFIX``: the prefix and the first file it writes (``PREFIXaa``, ``PREFIX00``
    with ``-d``, then ``--additional-suffix``); the later ones differ only in the letters."""
    operands, values = _split(args, *_SPLIT_VALUES)
    prefix = operands[1] if len(operands) > 1 else "x"
    length = values.get("-a", values.get("--suffix-length", "2"))
    width = int(length) if length.isdigit() and 0 < int(length) < 10 else 2
    digits = [a for a in args if a.startswith(("--numeric-suffixes", "--hex-suffixes"))]
    start = digits[-1].partition("=")[2] if digits else ""
    numeric = digits or any(
        a.startswith("-") and not a.startswith("--") and ("d" in a or "x" in a) for a in args
    )
    first = start.zfill(width) if start else ("0" if numeric else "a") * width
    return [prefix, prefix + first + values.get("--additional-suffix", "")]


def rsync_remote(argv: tuple[str, ...]) -> bool:
    """Whether ``rsync`` reaches another host: an operand ``host:path``, ``host::module`` or
    ``rsync://…``, or a daemon's own options; between two local paths it is a local copy."""
    args = list(argv[1:])
    if any(long_option(a.partition("=")[0], _DAEMON) in _DAEMON for a in args):
        return True
    operands = _split(args, *_COPY_VALUES["rsync"])[0]
    return any(o.startswith("rsync://") or ":" in o.split("/")[0] for o in operands)


_DAEMON = {"--daemon", "--server", "--port", "--address", "--sockopts", "--connect-prog"}


def landing_paths(writes: Iterable[str], copies: Iterable[Copy], root: Path) -> list[str]:
    """Every path written, copies into existing folders resolved against ``root``; a folder
    copied or moved brings each of its files along (``cp -r drafts config`` writes
    ``config/new.yml``), named under the destination and under the destination's folder of
    its name (which of the two cp picks depends on ``-T`` and on the destination)."""
    out = list(writes)
    for copy in copies:
        raw = os.path.expanduser(copy.dest) if copy.dest.startswith("~") else copy.dest
        out += copy.paths((root / raw).is_dir())
        base = copy.dest.rstrip("/") or "/"
        for source in copy.sources:
            name = PurePosixPath(source.rstrip("/")).name
            for rel in folder_files(source, root)[:MAX_FOLDER_FILES]:
                out += [f"{base}/{rel}", f"{base}/{name}/{rel}"]
    return out


MAX_FOLDER_FILES = 1000  # past this many, a folder a copy brings is not read name by name


def folder_files(source: str, root: Path) -> list[str]:
    """The files and folders under ``source`` when it is a folder (relative to it; at most
    ``MAX_FOLDER_FILES`` + 1, links not followed), else []."""
    raw = os.path.expanduser(source) if source.startswith("~") else source
    folder = Path(raw) if os.path.isabs(raw) else root / raw
    if folder.is_symlink() or not folder.is_dir():
        return []
    out: list[str] = []
    for where, dirs, files in walk(folder, onerror=lambda _exc: None):
        rel = Path(where).relative_to(folder)
        out += [(rel / n).as_posix() for n in (*dirs, *files)]
        if len(out) > MAX_FOLDER_FILES:
            return out[: MAX_FOLDER_FILES + 1]
    return out


def _split(args: list[str], short: set[str], long: set[str]) -> tuple[list[str], dict[str, str]]:
    """Operands and the values of valued options (last one wins)."""
    operands: list[str] = []
    values: dict[str, str] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands += args[i + 1 :]
            break
        if a.startswith("--"):
            key, eq, value = a.partition("=")
            key = long_option(key, long)  # `--target` is `--target-directory`
            if key in long:
                if not eq and i + 1 < len(args):
                    value, i = args[i + 1], i + 1
                values[key] = value
        elif a.startswith("-") and len(a) > 1:
            for j, ch in enumerate(a[1:], 1):
                if f"-{ch}" in short:
                    value = a[j + 1 :]
                    if not value and i + 1 < len(args):
                        value, i = args[i + 1], i + 1
                    values[f"-{ch}"] = value
                    break
        else:
            operands.append(a)
        i += 1
    return operands, values


def _copy(name: str, args: list[str]) -> tuple[list[str], list[Copy]]:
    short, long = _COPY_VALUES[name]
    operands, values = _split(args, short, long)
    if name == "install" and any(a == "-d" or a == "--directory" for a in args):
        return operands, []
    removed = list(operands) if name == "mv" else []
    target = values.get("-t", values.get("--target-directory"))
    if name == "cp" and "--parents" in {long_option(a, {"--parents"}) for a in args}:
        froms = operands if target is not None else operands[:-1]  # `cp --parents a/b D`: D/a/b
        into = target if target is not None else operands[-1] if operands else "."
        return [], [Copy(os.path.normpath(f"{into}/./{PurePosixPath(s).parent}"), (s,), True)
                    for s in froms]  # fmt: skip
    if target is not None:
        return removed, [Copy(target, tuple(operands), folder=True)]
    if name == "ln" and len(operands) == 1:  # `ln -s ../x`: a link named x here
        return [PurePosixPath(operands[0].rstrip("/")).name], []
    if len(operands) < 2:
        return removed, []
    dest, sources = operands[-1], tuple(operands[:-1])
    if name == "rsync" and ":" in dest.split("/")[0]:
        return [], []  # a remote destination (a network command anyway)
    folder = len(sources) > 1 or dest.endswith("/")
    return (list(sources) if name == "mv" else []), [Copy(dest, sources, folder)]


def _in_place(
    args: list[str],
    *,
    short_values: str,
    long_values: set[str],
    script_flags: tuple[str, ...],
    digits: str = "",
) -> list[str]:
    """The files ``sed -i``/``perl -pi -e`` rewrite: the operands after the script
    (``digits``: letters whose value is the digits after them, if any: perl's ``-0777``)."""
    in_place, scripted, operands = False, False, []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands += args[i + 1 :]
            break
        if a.startswith("--"):
            key = long_option(a.partition("=")[0], {"--in-place", *long_values})
            if key == "--in-place":
                in_place = True
            elif key in long_values:
                scripted = scripted or key in script_flags
                i += 0 if "=" in a else 1
        elif a.startswith("-") and len(a) > 1:
            letters = re.sub(rf"([{digits}])(x[0-9a-fA-F]+|[0-9]+)", r"\1", a) if digits else a
            for j, ch in enumerate(letters[1:], 1):
                if ch == "i":  # the rest of the word is a backup suffix
                    in_place = True
                    break
                if ch in short_values:
                    scripted = scripted or f"-{ch}" in script_flags
                    i += 0 if letters[j + 1 :] else 1
                    break
        else:
            operands.append(a)
        i += 1
    if not in_place:
        return []
    return operands if scripted else operands[1:]


def _operands(args: list[str], valued: set[str]) -> list[str]:
    short = {v for v in valued if not v.startswith("--")}
    return _split(args, short, valued - short)[0]


def _valued(args: list[str], short: str | None, long: str) -> list[str]:
    out = []
    for i, a in enumerate(args):
        key, eq, value = a.partition("=")
        key = long_option(key, {long})  # `--out=F` is `--output=F`
        if eq and key == long:
            out.append(value)
        elif (key if not eq else a) in (long, short) and i + 1 < len(args):
            out.append(args[i + 1])
        elif short and a.startswith(short) and len(a) > len(short) and not a.startswith("--"):
            out.append(a[len(short) :])
    return out
