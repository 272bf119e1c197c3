"""The files ``rename`` writes: util-linux's ``rename FROM TO FILE…`` (``rename.ul``) and perl's
``rename EXPR FILE…`` (``prename``, ``file-rename``, ``perl-rename``); a plain ``rename`` is
whichever the host has (an ELF binary is util-linux's, a script perl's; none found: both).

util-linux's new name is computed as it does: ``FROM`` replaced by ``TO`` once (``-a`` every
time, ``-l`` the last time) in the file's last part, or in the whole path when ``FROM`` holds a
``/``; ``TO`` may hold one (``rename b.txt ../config/b.yml src/b.txt`` writes
``config/b.yml``). Before, its ``FROM`` and ``TO`` were read as files, ``TO``'s folder the
workspace root, so ``rename .txt .yml src/a.txt`` was refused under any ``Write(…)`` deny rule.
A perl expression applies to the whole path and can move a file anywhere (``s{^src/}{config/}``):
any name, except for ``s/TAIL$/NEW/`` with plain names, which stays in the file's folder.
Before, any perl rename counted as a new name in the file's own folder only.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import PurePosixPath

from agent.made_names import Made

RENAMERS = {"rename", "prename", "file-rename", "perl-rename", "rename.ul"}
_UTIL_FLAGS = set("vsnaloi")
_SAME_FOLDER = re.compile(r"s/(?:[\w-]|\\\.)+\$/[\w.-]*/")  # `s/\.txt$/.md/`
_GLOB = set("*?[]")


def renamed(name: str, args: list[str]) -> tuple[list[str], list[Made]]:
    """(files written: each file renamed and its new name where known, names written that
    the check cannot list) of ``rename ARGS``."""
    form = _form(name)
    perl = _perl(args) if form != "util" else ([], [])
    util = _util(args) if form != "perl" else ([], [])
    return perl[0] + util[0], perl[1] + util[1]


def _form(name: str) -> str:
    if name == "rename.ul":
        return "util"
    if name != "rename":
        return "perl"
    found = shutil.which("rename")
    try:
        with open(found or "", "rb") as f:
            head = f.read(4)
    except OSError:
        return "both"
    return "util" if head == b"\x7fELF" else "perl" if head.startswith(b"#!") else "both"


def _perl(args: list[str]) -> tuple[list[str], list[Made]]:
    exprs, operands, i = [], [], 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands += args[i + 1 :]
            break
        if a in ("-e", "-E") and i + 1 < len(args):
            exprs.append(args[i + 1])
            i += 2
            continue
        if not a.startswith("-") or a == "-":
            operands.append(a)
        i += 1
    if not exprs:
        exprs, operands = operands[:1], operands[1:]
    if exprs and all(_SAME_FOLDER.fullmatch(e) for e in exprs):
        folders = dict.fromkeys(str(PurePosixPath(o).parent) for o in operands)
        return operands, [_folder_names(f) for f in folders]
    return operands, [Made("", unlisted=True)]


def _util(args: list[str]) -> tuple[list[str], list[Made]]:
    words = [a for a in args if a != "--"]
    flags = "".join(a[1:] for a in words if a.startswith("-") and not a.startswith("--"))
    longs = {a for a in words if a.startswith("--")}
    operands = [a for a in words if not a.startswith("-") or a == "-"]
    if len(operands) < 3 or "n" in flags or "--no-act" in longs:
        return [], []
    if set(flags) - _UTIL_FLAGS or "s" in flags or "--symlink" in longs:
        return operands[2:], [Made("", unlisted=True)]  # it renames where each link leads
    old, new, files = operands[0], operands[1], operands[2:]
    every, last = "a" in flags or "--all" in longs, "l" in flags or "--last" in longs
    written, made = list(files), []
    for file in files:
        if _GLOB & set(file):  # the files the pattern names when it runs
            within = "/" not in old + new and not _GLOB & set(os.path.dirname(file))
            made.append(
                _folder_names(os.path.dirname(file) or ".") if within else Made("", unlisted=True)
            )
            continue
        head, tail = ("", file) if "/" in old else os.path.split(file)
        if old in tail:
            if every:
                tail = tail.replace(old, new)
            elif last:
                tail = new.join(tail.rsplit(old, 1))
            else:
                tail = tail.replace(old, new, 1)
            written.append(os.path.join(head, tail) if head else tail)
    return written, made


def _folder_names(folder: str) -> Made:
    return Made(f"{folder}/" if folder != "." else "", unlisted=True)
