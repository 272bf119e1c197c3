"""Files a command writes because another file names them: the members ``tar -x`` and ``unzip``
unpack, the files ``git apply``, ``git am`` and ``patch`` change.

A command line does not say which files these write; the archive or the patch does. So the
permission check reads it (bounded) and meets each path with the deny rules and the
memory/settings/outside line like a redirection: before, ``tar xf x.tar`` holding
``sub/AGENTS.md`` wrote a subfolder's memory file in ``ci``, and ``git apply`` a file a
``Write(…)`` deny rule names. What cannot be read — an archive or patch from stdin, one that is
not there yet or is over the bounds, a name rewritten by ``--transform`` — is not understood:
the line asks (refused in ``ci``). The file is read when the line is checked, so a line that
could change it first (any other command but a few that write nothing) is not understood either.
"""

from __future__ import annotations

import os
import re
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agent.archive_writes import archive_folder, archive_read
from agent.shell_wrappers import git_subcommand_form, long_option

MAX_SOURCE_BYTES = 64 * 1024 * 1024  # an archive or patch read at check time
MAX_MEMBERS = 10_000
MAX_INFLATED = 256 * 1024 * 1024  # bytes a compressed archive may inflate to beyond its size
PATCH_PREFIXES = ("--- ", "+++ ", "*** ", "rename to ", "copy to ", "rename from ")


@dataclass(frozen=True)
class Unpack:
    """``kind`` (tar, zip, patch, git-apply) reads ``source`` (None: stdin) and writes the names
    inside it under ``into``, ``strip`` leading components removed; ``files`` named on the
    command line (``patch FILE``) replace the patch's names; ``why`` makes it unreadable."""

    kind: str
    source: str | None
    into: str = "."
    strip: int = 0
    files: tuple[str, ...] = ()
    why: str = ""
    extra: tuple[str, ...] = ()  # written besides the names inside (``patch -r REJECTS``)
    # patch's backups of each file: ``-B PREFIX`` puts one at PREFIX + its path, ``-z SUF`` at
    # its path + SUF (``.orig`` by default, also made when a hunk does not apply cleanly)
    backup: tuple[str, str] = ("", ".orig")

    @property
    def shown(self) -> str:
        return f"files inside {self.source or 'stdin'}"

    def landing(self, root: Path) -> tuple[list[str], str]:
        """(paths written relative to ``root`` or absolute, why they could not be read)."""
        if self.why:
            return [], self.why
        written, why = self._landing(root)
        if self.kind != "patch":
            return written, why
        prefix, suffix = self.backup
        return [*written, *(f"{prefix}{f}{suffix if not prefix else ''}" for f in written)], why

    def _landing(self, root: Path) -> tuple[list[str], str]:
        if self.files:
            return [f for f in self.files if f != "-"], ""
        if self.source is None:
            return [], f"{self.kind} reads what it writes from stdin"
        path = Path(os.path.expanduser(self.source))
        path = path if path.is_absolute() else root / path
        try:
            if not path.is_file() or path.stat().st_size > MAX_SOURCE_BYTES:
                return [], f"{self.source} is not a file of at most 64 MB now"
            names = _names(self.kind, path)
        except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError, ValueError) as exc:
            return [], f"{self.source} cannot be read ({type(exc).__name__})"
        if names is None:
            return [], f"{self.source} names over {MAX_MEMBERS} files or inflates past 256 MB"
        out = list(self.extra)
        for name in names:
            parts = [p for p in PurePosixPath(name.lstrip("/")).parts if p != "."]
            if len(parts) > self.strip:
                out.append(_under(self.into, *parts[self.strip :]))
                if self.kind == "patch":  # without -p, patch takes the base name
                    out.append(_under(self.into, parts[-1]))
        return out, ""


def _names(kind: str, path: Path) -> list[str] | None:
    if kind == "tar":
        names = []
        # Going past a member of a compressed archive inflates it: a few MB of gzip can hold
        # terabytes of zeros, which the check would otherwise spend minutes on.
        budget = 2 * path.stat().st_size + MAX_INFLATED
        with tarfile.open(path, "r:*") as archive:
            for member in archive:
                names.append(member.name)
                if len(names) > MAX_MEMBERS or member.offset_data + member.size > budget:
                    return None
        return names
    if kind == "zip":
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
        return names if len(names) <= MAX_MEMBERS else None
    return _patch_names(path.read_bytes().decode("utf-8", "replace"), git=kind == "git-apply")


def _patch_names(text: str, *, git: bool) -> list[str] | None:
    names: list[str] = []
    for line in text.splitlines():
        if line.startswith("diff --git "):
            names += [w for w in line[len("diff --git ") :].split(" ") if w]
            continue
        prefix = next((p for p in PATCH_PREFIXES if line.startswith(p)), None)
        if prefix is None:
            continue
        name = line[len(prefix) :].split("\t")[0].strip().strip('"')
        if prefix.startswith(("rename", "copy")):
            name = f"x/{name}"  # git's rename lines carry no a/ b/ prefix
        if name and name != "/dev/null":
            names.append(name)
        if len(names) > MAX_MEMBERS:
            return None
    return names


def command_unpack(argv: tuple[str, ...]) -> Unpack | None:
    """What one simple command unpacks (``git apply`` past git's global options), if anything."""
    name = PurePosixPath(argv[0]).name
    if name == "git":  # `git am MBOX` applies the patches in it as `git apply` does
        sub = git_subcommand_form(argv) or argv
        if sub[1:2] == ("am",) and any(a in _AM_STORED for a in sub[2:]):
            return Unpack("git-apply", None, why="git am applies the patches it stored")
        if sub[1:2] == ("am",) and any(a in ("--abort", "--quit", "--show-current-patch")
                                       or a.startswith("--show-current-patch=")
                                       for a in sub[2:]):  # fmt: skip
            return None
        return git_apply(list(sub[2:])) if sub[1:2] in (("apply",), ("am",)) else None
    return unpack(name, list(argv[1:]))


_AM_STORED = {"--continue", "--skip", "--resolved", "-r", "--retry", "--allow-empty"}


def unpack(name: str, args: list[str]) -> Unpack | None:
    """What an archive or patch command writes, or None when it writes nothing."""
    if name in ("tar", "gtar", "bsdtar"):
        return _tar(args)
    if name == "unzip":
        return _unzip(args)
    if name == "patch":
        return _patch(args)
    folder = archive_folder(name, args)
    if folder is None:
        return None
    return Unpack(name, archive_read(name, args), into=folder, why=f"{name} archives are not read")


def git_apply(args: list[str]) -> Unpack | None:
    """``git apply`` (``args`` after ``apply``): without ``--check``/``--stat``… it writes
    the files the patch names, one leading component stripped unless ``-p N`` says otherwise."""
    args = [_whole(a, _GIT_APPLY_LONG) for a in args]  # `--dir=x` is `--directory=x`
    if any(a in ("--check", "--stat", "--numstat", "--summary", "--cached") for a in args):
        return None
    strip, into, patches = 1, ".", []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-p") and a[2:].isdigit():
            strip = int(a[2:])
        elif a == "-p" and i + 1 < len(args):
            strip, i = _int(args[i + 1]), i + 1
        elif a.startswith("--directory="):
            into = a.partition("=")[2]
        elif a in ("--directory", "--include", "--exclude", "--whitespace", "-C"):
            i += 1
        elif not a.startswith("-"):
            patches.append(a)
        i += 1
    if len(patches) > 1:
        return Unpack("git-apply", None, why="git apply of several patches at once")
    return Unpack("git-apply", patches[0] if patches else None, into=into, strip=strip)


_GIT_APPLY_LONG = {"--check", "--stat", "--numstat", "--summary", "--cached", "--directory",
                   "--include", "--exclude", "--whitespace"}  # fmt: skip


def _whole(word: str, options: set[str]) -> str:
    """``word`` with its long option whole (GNU's getopt and git take any unambiguous start:
    ``--dir=x`` is ``--directory=x``, ``--extr`` is ``--extract``)."""
    key, eq, value = word.partition("=")
    return long_option(key, options) + eq + value if word.startswith("--") else word


# tar's options that take a value: short ones take the next word in a bundle, in order.
_TAR_SHORT_VALUES = set("bCfFgHIKLNTVX")
_TAR_LONG_VALUES = {"--file", "--directory", "--strip-components", "--to-command",
                    "--use-compress-program", "--info-script", "--new-volume-script",
                    "--rsh-command", "--transform", "--xform", "--exclude", "--files-from"}  # fmt: skip
# Listing, comparing or unpacking to stdout writes no file.
_TAR_NO_WRITE = {"-t", "--list", "-O", "--to-stdout", "-d", "--diff", "--compare", "-c", "--create"}
# Options that run a program or rename what is written: the names in the archive no longer say.
_TAR_CODE = {"--to-command", "--use-compress-program", "-I", "--info-script", "-F",
             "--new-volume-script", "--checkpoint-action", "--rsh-command", "--transform",
             "--xform", "-P", "--absolute-names"}  # fmt: skip


_TAR_LONG = {*_TAR_LONG_VALUES, *(o for o in _TAR_NO_WRITE | _TAR_CODE if o.startswith("--")),
             "--extract", "--get", "--append", "--update", "--catenate", "--concatenate",
             "--delete", "--one-top-level"}  # fmt: skip


_TAR_WRITES = {"-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate",
               "--concatenate", "--delete"}  # fmt: skip


def tar_archive(args: list[str]) -> str | None:
    """The archive ``tar -c``/``-r``/``-u``/``-A``/``--delete`` writes (``-f FILE``), if any."""
    letters = _tar_options(args)
    if not {k for k, _ in letters} & _TAR_WRITES:
        return None
    values = {k: v for k, v in letters if v is not None}
    archive = values.get("--file", values.get("-f"))
    return None if archive in (None, "-") else archive


def _tar(args: list[str]) -> Unpack | None:
    letters = _tar_options(args)
    keys = {k for k, _ in letters}
    if not keys & {"-x", "--extract", "--get"} or keys & _TAR_NO_WRITE:
        return None
    values = {k: v for k, v in letters if v is not None}
    source = values.get("--file", values.get("-f"))
    code = sorted(k for k in keys if k in _TAR_CODE)
    into = values.get("--directory", values.get("-C", "."))
    if "--one-top-level" in keys:  # `--one-top-level[=DIR]`: into DIR, or the archive's stem
        top = values.get("--one-top-level") or re.sub(
            r"(\.tar)?(\.[a-z0-9]+)?$", "", PurePosixPath(source or "").name
        )
        into = _under(into, top) if top else into
    return Unpack(
        "tar",
        None if source in (None, "-") else source,
        into=into,
        strip=_int(values.get("--strip-components", "")),
        why=f"tar {code[0]} changes what it writes or runs" if code else "",
    )


def _tar_options(args: list[str]) -> list[tuple[str, str | None]]:
    """tar's options in order, (option, value), the old style's bundle (``tar xzf F``) too."""
    words = list(args)
    letters: list[tuple[str, str | None]] = []  # (option, value)
    if words and not words[0].startswith("-"):  # `tar xzf a.tar -C out`: the old style
        bundle, words = words[0], words[1:]
        for ch in bundle:
            value = words.pop(0) if ch in _TAR_SHORT_VALUES and words else None
            letters.append((f"-{ch}", value))
    i = 0
    while i < len(words):
        a = words[i]
        if a.startswith("--"):
            key, eq, value = _whole(a, _TAR_LONG).partition("=")
            if not eq and key in _TAR_LONG_VALUES and i + 1 < len(words):
                value, i = words[i + 1], i + 1
            letters.append((key, value))
        elif a.startswith("-") and len(a) > 1:
            for j, ch in enumerate(a[1:], 1):
                if ch in _TAR_SHORT_VALUES:
                    value = a[j + 1 :]
                    if not value and i + 1 < len(words):
                        value, i = words[i + 1], i + 1
                    letters.append((f"-{ch}", value))
                    break
                letters.append((f"-{ch}", None))
        i += 1
    return letters


def _unzip(args: list[str]) -> Unpack | None:
    source, into, junk = None, ".", False
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-l", "-t", "-v", "-Z", "-p", "-c", "-z"):
            return None
        if a == "-d" and i + 1 < len(args):
            into, i = args[i + 1], i + 1
        elif a.startswith("-d") and len(a) > 2:
            into = a[2:]
        elif a == "-P":
            i += 1
        elif a == "-x":
            break  # the rest are names left out
        elif a.startswith("-"):
            junk = junk or "j" in a
        elif source is None:
            source = a
        i += 1
    if source is not None and not source.endswith(".zip") and not Path(source).exists():
        source += ".zip"  # unzip adds it
    return Unpack("zip", source, into=into, why="unzip -j keeps only base names" if junk else "")


_PATCH_LONG = {"--dry-run", "--check", "--input", "--strip", "--directory", "--output",
               "--reject-file", "--prefix", "--suffix", "--basename-prefix"}  # fmt: skip


def _patch(args: list[str]) -> Unpack | None:
    source, into, strip, operands, why = None, ".", 0, [], ""
    backup = ("", ".orig")
    written: dict[str, str] = {}  # `-o FILE`, `-r FILE`
    i = 0
    while i < len(args):
        a = _whole(args[i], _PATCH_LONG)
        key, eq, value = a.partition("=")
        if a in ("--dry-run", "-C", "--check"):
            return None
        if a in ("-i", "-p", "-d", "-o", "-B", "-r", "-D", "-F", "-V", "-Y", "-z") or (
            a.startswith("--") and not eq and a in ("--input", "--strip", "--directory",
                                                    "--output", "--reject-file", "--prefix",
                                                    "--suffix", "--basename-prefix")
        ):  # fmt: skip
            value, i = (args[i + 1] if i + 1 < len(args) else ""), i + 1
            key = a
        elif (
            a.startswith(("-i", "-p", "-d", "-o", "-r", "-B", "-z")) and len(a) > 2 and a[1] != "-"
        ):
            key, value = a[:2], a[2:]
        if key in ("-i", "--input"):
            source = value
        elif key in ("-p", "--strip"):
            strip = _int(value)
        elif key in ("-d", "--directory"):
            into = value
        elif key in ("-o", "--output", "-r", "--reject-file"):
            written[key.lstrip("-")[0]] = value  # the output, the rejected hunks
        elif key in ("-B", "--prefix"):  # `-B bak/`: bak/src/a.py, a backup of src/a.py
            backup = (value, backup[1]) if value else backup
        elif key in ("-z", "--suffix"):
            backup = (backup[0], value or backup[1])
        elif key in ("-Y", "--basename-prefix"):
            why = f"patch {key} writes a file of its own"
        elif not a.startswith("-") and key == a:
            operands.append(a)
        i += 1
    if len(operands) >= 2:
        source = operands[1]
    if source is not None:  # `-d DIR` is where patch goes first: it reads `-i PATCH` there
        source = source if os.path.isabs(source) or source == "-" else _under(into, source)
    source = None if source == "-" else source
    extra = tuple(_under(into, f) for f in written.values() if f != "-")
    if "o" in written:  # `patch -o OUT`: OUT is written instead of the files patched
        return Unpack("patch", source, into=into, files=extra or ("-",), why=why, backup=backup)
    if operands:  # `patch FILE [PATCH]`: FILE is what changes
        files = (_under(into, operands[0]), *extra)
        return Unpack("patch", source, into=into, files=files, why=why, backup=backup)
    return Unpack("patch", source, into=into, strip=strip, extra=extra, why=why, backup=backup)


def _under(folder: str, *parts: str) -> str:
    return os.path.join(folder, *parts) if folder not in (".", "./", "") else os.path.join(*parts)


def _int(word: str) -> int:
    return int(word) if word.isdigit() else 0
