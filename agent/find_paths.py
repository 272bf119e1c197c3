"""What ``find … -exec CMD {} +`` hands its command in place of ``{}``: a path under one of
find's starting points (or the starting point itself), whose last part matches its ``-name``
and whose whole matches its ``-path``. The check met ``{}`` as any name in the workspace, so
``find src -name '*.py' -exec sed -i 's/a/b/' {} +`` was refused under any ``Write(…)`` deny
rule (``config/**`` included); it now stands for ``src/`` + any name + ``.py``
(``agent.made_names``), which a rule on ``config/**`` cannot match, while ``find . -name '*.py'``
still reaches ``config/x.py``. A starting point or filter the shell computes or expands, an
expression with ``-o``, ``!`` or ``,`` (a filter that may not hold), or ``-files0-from`` leaves
``{}`` as any name.

``-execdir CMD`` (``-okdir``) runs CMD inside the folder of each file found: a relative path CMD
writes lands under any folder the find reaches (``execdir_writes``), not at the workspace root,
where it was checked before (``find src -execdir cp main.py ../config/a.yml ';'`` passed a
``Write(config/**)`` deny rule).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator
from pathlib import PurePosixPath

from agent.computed_writes import guessed
from agent.made_names import Made
from agent.shell_command import SimpleCommand

# find's options before its starting points, and those of them that take the next word.
_LEADING = {"-H", "-L", "-P"}
_LEADING_VALUES = {"-D"}
# Expression words under which a filter need not hold for every file the command gets.
_EITHER = {"-o", "-or", "!", "-not", ","}
_GLOB = re.compile(r"[*?\[\]\\]")
_SHELL = set("*?[]$`{}~")


def find_filled(args: list[str], inner: list[str], computed: Collection[str]) -> list[list[str]]:
    """``inner`` (an ``-exec`` command of ``find ARGS``) as many times as there are starting
    points, ``{}`` in each word spelled as what it stands for: the starting point itself, then
    ``START/{}SUFFIX`` (``{}`` left for the names the check cannot list)."""
    if not any("{}" in word for word in inner):
        return [inner]
    starts, expression = _starts(args)
    if (
        any(w in computed or _SHELL & set(w) for w in starts)
        or "-files0-from" in args
        or _EITHER & set(expression)
    ):
        return [inner]
    head, tail = "", ""
    for flag, value in zip(expression, expression[1:], strict=False):
        if flag in ("-name", "-iname"):
            tail = max(tail, _literal_tail(value), key=len)
        elif flag in ("-path", "-ipath", "-wholename", "-iwholename"):
            tail = max(tail, _literal_tail(value), key=len)
            head = max(head, _GLOB.split(value, 1)[0], key=len)
    out = []
    for start in starts or ["."]:
        prefix = head if head.startswith(start.rstrip("/") + "/") else start.rstrip("/") + "/"
        out.append([w.replace("{}", start) for w in inner])
        out.append([w.replace("{}", f"{prefix}{{}}{tail}") for w in inner])
    return out


def execdir_writes(
    args: tuple[str, ...], commands: Iterable[SimpleCommand], computed: Collection[str]
) -> Iterator[Made]:
    """Where the relative paths ``commands`` (those of ``find ARGS``'s clauses) write land when
    ARGS has an ``-execdir``/``-okdir``: in a starting point's folder, the starting point, or any
    folder under it; with ``..``, or a starting point the shell computes, any path ending so.
    And what ``-delete`` removes."""
    if "-delete" in args:  # `find config -delete`: what it finds, as `{}` stands for
        either = _EITHER & set(args)  # `-o` after an `-exec`: a filter that may not hold
        for filled in [["{}"]] if either else find_filled(list(args), ["{}"], computed):
            head, mark, tail = filled[0].partition("{}")
            yield from [Made(head, tail, unlisted=True)] if mark else [Made(head, letters="")]
            yield from [Made("/", tail, unlisted=True)] if mark and not head else []
    if not {"-execdir", "-okdir"} & set(args):
        return
    starts = _starts(list(args))[0] or ["."]
    known = not any(w in computed or _SHELL & set(w) for w in starts)
    walked = bool({"-L", "-follow"} & set(args))
    for c in commands:
        landed = [f"{copy.dest.rstrip('/')}/{PurePosixPath(s.rstrip('/')).name}"
                  for copy in c.copies for s in copy.sources]  # fmt: skip
        for path in [*c.writes, *c.arg_writes, *(copy.dest for copy in c.copies), *landed]:
            if not path or path.startswith(("/", "~")):
                continue
            if not known or ".." in PurePosixPath(path).parts:
                yield from guessed(path)
                continue
            for start in starts:
                folder = start.rstrip("/") or "/"
                yield from [Made(f"{folder}/", f"/{path}", unlisted=True, walked=walked),
                        Made(f"{folder}/{path}", letters="", unlisted=True),
                        Made(f"{PurePosixPath(folder).parent}/{path}", letters="", unlisted=True)]  # fmt: skip


def _starts(args: list[str]) -> tuple[list[str], list[str]]:
    """(starting points, the expression up to the first ``-exec``) of ``find ARGS``."""
    i = 0
    while i < len(args) and (args[i] in _LEADING or args[i] in _LEADING_VALUES
                             or args[i].startswith("-O")):  # fmt: skip
        i += 2 if args[i] in _LEADING_VALUES else 1
    j = i
    while j < len(args) and not args[j].startswith(("-", "(", "!", ")", ",")):
        j += 1
    rest = args[j:]
    end = next((k for k, w in enumerate(rest) if w in ("-exec", "-execdir", "-ok", "-okdir")),
               len(rest))  # fmt: skip
    return args[i:j], rest[:end]


def _literal_tail(glob: str) -> str:
    """The characters after a glob's last special one: every name it matches ends so."""
    parts = _GLOB.split(glob)
    return parts[-1] if parts else ""
