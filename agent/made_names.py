"""Files a program names after a prefix it is given: ``split IN PREFIX`` writes ``PREFIXaa``,
``PREFIXab``…, ``csplit -f PREFIX`` ``PREFIX00``, ``PREFIX01``…. None of those names is on the
line and most do not exist when the line is checked, so each prefix is met as the pattern
``PREFIX*SUFFIX`` (the ``*`` the letters the program puts there; xargs's input in a path it
writes, ``xargs -I{} cp x config/{}``, is met the same way): a rule's glob, or a memory, settings or
config file name, that any such name matches covers the command. Before, only the first file
(``PREFIXaa``) met the rules, and ``split … out/p`` wrote ``out/pab`` past ``Write(out/pab)``.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agent.rules import Rule, path_spellings
from agent.write_policy import SENSITIVE_GLOBS, WriteTarget, classify_write


@dataclass(frozen=True)
class Made:
    """The names ``prefix`` + some of ``letters`` (any but ``/``: None) + ``suffix`` a command
    writes."""

    prefix: str
    suffix: str = ""
    letters: str | None = None
    # Any name, ``/`` included, that the line does not list: what xargs reads from stdin
    # (``xargs -I{} cp x config/{}``), a repository's files (``git clone . DIR``). Met by the
    # deny rules only, as the memory line would otherwise refuse every ``xargs cp -t DIR`` in ci.
    unlisted: bool = False
    # Names found by a walk under ``prefix`` (``find src -exec … {}``): a link there leads
    # anywhere, so a folder holding one stands for any name (``made_rule``).
    walked: bool = False

    @property
    def shown(self) -> str:
        middle = "<any name>" if self.unlisted else "*" if self.letters != "" else ""
        return f"{self.prefix}{middle}{self.suffix}"


@dataclass(frozen=True)
class MadeTarget(WriteTarget):
    made: Made = Made("")


def made_targets(made: Iterable[Made], root: Path) -> list[MadeTarget]:
    """Where each pattern lands: ``sensitive`` when a name it makes may be a memory, settings
    or config file (in any case, as ``is_sensitive`` reads one), else where its folder is."""
    out = []
    for m in made:
        folder = classify_write(os.path.dirname(m.prefix) or ".", root)
        where = folder.where
        rel = _relative(folder.path, Path(root).resolve())
        if rel is not None and not m.unlisted:
            base = f"{rel}/" if rel != "." else ""
            name = (base + PurePosixPath(m.prefix + "x").name[:-1]).casefold()
            if any(
                _meets(g.casefold(), name, m.suffix.casefold(), m.letters) for g in SENSITIVE_GLOBS
            ):
                where = "sensitive"
        out.append(MadeTarget(m.shown, folder.path, where, m))
    return out


def made_rule(rules: Iterable[Rule], target: WriteTarget, root: Path) -> Rule | None:
    """The first write rule a name ``target`` makes matches, in any case (deny rules)."""
    if not isinstance(target, MadeTarget):
        return None
    m = target.made
    linked = m.walked and _has_link(os.path.dirname(m.prefix) or ".", root)
    for rule in rules:
        if rule.kind != "write":
            continue
        if rule.pattern is None or linked:
            return rule
        for spelling in path_spellings(os.path.dirname(m.prefix) or ".", root, shell=True):
            tail = PurePosixPath(m.prefix + "x").name[:-1]
            folder = os.path.join(spelling, "x")[:-1]
            for pattern, path in _forms(rule.pattern, folder, root, m.unlisted and not tail):
                for fold in (False, True):
                    p, x = (pattern.casefold(), path.casefold()) if fold else (pattern, path)
                    t, s = (tail.casefold(), m.suffix.casefold()) if fold else (tail, m.suffix)
                    if any(
                        _meets(g, x + t, s, m.letters, slash=m.unlisted)
                        for g in (p, p[3:] if p[:3] == "**/" else p)
                    ):
                        return rule
    return None


MAX_WALKED = 10_000  # entries looked at for a link under a folder `find` walks


def _has_link(folder: str, root: Path) -> bool:
    """Whether ``folder`` (under ``root``) holds a symbolic link in its first ``MAX_WALKED``
    entries, or has more (then it may)."""
    raw = os.path.expanduser(folder) if folder.startswith("~") else folder
    top = Path(raw) if os.path.isabs(raw) else Path(root) / raw
    if top.is_symlink():
        return True
    seen = 0
    for where, dirs, files in os.walk(top):  # links to folders are listed, not followed
        for name in (*dirs, *files):
            seen += 1
            if seen > MAX_WALKED or os.path.islink(os.path.join(where, name)):
                return True
    return False


def _forms(pattern: str, folder: str, root: Path, below: bool = False) -> list[tuple[str, str]]:
    """(glob, the folder's spelling it is matched against), as ``rules.path_matches`` pairs
    them: absolute for ``//abs``, ``~/x`` and the workspace's own path, else relative. A folder
    that holds the workspace, when any name ``below`` it is written (``rm -rf ..``), is met as
    the workspace itself."""
    absolute = Path(folder) if os.path.isabs(folder) else Path(root) / folder
    full = os.path.normpath(absolute).rstrip("/") + "/"
    if pattern.startswith("//"):
        return [(pattern[1:], full)]
    if pattern.startswith("~/"):
        return [(os.path.expanduser(pattern), full)]
    base = str(Path(root).resolve()).rstrip("/") + "/"
    if pattern.startswith(base):
        return [(pattern, full)]
    if below and base.startswith(full):
        full = base
    if not full.startswith(base) and full != base:
        return []
    return [(pattern.lstrip("/") if pattern.startswith("/") else pattern, full[len(base) :])]


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def _meets(
    glob: str, prefix: str, suffix: str, letters: str | None, *, slash: bool = False
) -> bool:
    """Whether fnmatch's ``glob`` matches some ``prefix`` + X + ``suffix``, X made of
    ``letters`` (None: any but ``/``, or any at all with ``slash``)."""
    tokens = _tokens(glob)
    states = _read(tokens, _closure(tokens, {0}), prefix)
    seen, todo = set(states), list(states)
    while todo:  # every state X's letters can reach
        i = todo.pop()
        if i < len(tokens) and (tokens[i] == "*" or _any_letter(tokens[i], letters, slash)):
            nxt = i if tokens[i] == "*" else i + 1
            for j in _closure(tokens, {nxt}) - seen:
                seen.add(j)
                todo.append(j)
    return len(tokens) in _read(tokens, seen, suffix)


def _tokens(glob: str) -> list[str]:
    """``*``, or one character's pattern (``?``, ``[…]``, a literal) for fnmatch to test."""
    out, i = [], 0
    while i < len(glob):
        ch = glob[i]
        if ch == "[":  # as fnmatch reads a class: `[!]x]`, `[]x]`
            j = i + 2 if glob[i + 1 : i + 2] == "!" else i + 1
            end = glob.find("]", j + 1 if glob[j : j + 1] == "]" else j)
            if end != -1:
                out.append(glob[i : end + 1])
                i = end + 1
                continue
            out.append("[[]")
        elif ch != "*" or not out or out[-1] != "*":
            out.append(ch)  # `*`, `?` or a literal character
        i += 1
    return out


def _closure(tokens: list[str], states: set[int]) -> set[int]:
    out = set(states)
    for i in sorted(states):
        while i < len(tokens) and tokens[i] == "*":
            i += 1
            out.add(i)
    return out


def _read(tokens: list[str], states: set[int], text: str) -> set[int]:
    for ch in text:
        nxt = set()
        for i in states:
            if i < len(tokens):
                if tokens[i] == "*":
                    nxt.add(i)
                elif fnmatch.fnmatchcase(ch, tokens[i]):
                    nxt.add(i + 1)
        states = _closure(tokens, nxt)
        if not states:
            break
    return states


def _any_letter(token: str, letters: str | None, slash: bool = False) -> bool:
    """Whether one of ``letters`` (None: some character but ``/``) matches ``token``: for
    None the characters it names, their neighbours (a negated range's edge) and a few others
    are tried."""
    if letters is not None:
        return any(fnmatch.fnmatchcase(ch, token) for ch in letters)
    around = {chr(c) for ch in token for c in (ord(ch) - 1, ord(ch), ord(ch) + 1) if c > 0}
    tried = around | {"a", "\x01"}
    return any(fnmatch.fnmatchcase(ch, token) for ch in tried if ch != "/" or slash)
