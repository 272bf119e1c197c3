"""A parsed command line: the simple commands it would run and what they write, as the
permission check reads them (``agent.shell_parse`` builds it)."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from agent.made_names import Made
from agent.shell_words import MAX_MATCHES, matches
from agent.shell_wrappers import WRAPPERS, XARGS_INPUT
from agent.shell_writes import MAX_FOLDER_FILES, Copy, folder_files, landing_paths, made_by
from agent.unpack_writes import Unpack

# Commands that change no file: an archive or patch unpacked after them is the one checked.
_WRITE_NOTHING = {"cd", "pwd", "echo", "printf", "true", "false", ":", "test", "[", "mkdir", "ls"}


def program_name(word: str) -> str:
    """The name a command word runs by (``/bin/rm`` is ``rm``); ``.`` stays the builtin ``.``,
    bash's ``source``, which ``PurePosixPath`` reads as no name at all."""
    return word if word == "." else PurePosixPath(word).name


@dataclass(frozen=True)
class SimpleCommand:
    """One command the line would run: its words (literal where they could be read), the
    files its redirections write, and those its own arguments name (``agent.shell_writes``)."""

    argv: tuple[str, ...]
    writes: tuple[str, ...] = ()
    arg_writes: tuple[str, ...] = ()
    copies: tuple[Copy, ...] = ()
    unpacks: tuple[Unpack, ...] = ()  # archives and patches: their files say what is written

    @property
    def name(self) -> str:
        return program_name(self.argv[0]) if self.argv else ""

    @property
    def text(self) -> str:
        return shlex.join(self.argv)


@dataclass
class ParsedCommand:
    source: str
    commands: list[SimpleCommand] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)  # why the line is not fully understood
    # Folders ``cd``/``pushd``/``env -C`` move (part of) the line into; None: one it computes.
    cd: list[str | None] = field(default_factory=list)
    # What bash itself reads from a path that may be a socket (``echo < /dev/tcp/host/80``, a
    # computed ``< $F``): a connection of the shell's, whatever command the redirection is on.
    sockets: list[str] = field(default_factory=list)
    # Each descriptor a redirection opens: (number, path; ``&N`` a copy of N; None computed).
    descriptors: list[tuple[str, str | None]] = field(default_factory=list)
    # The paths written that the shell computes, as patterns (``agent.computed_writes``).
    guessed: list[Made] = field(default_factory=list)

    @property
    def understood(self) -> bool:
        return not self.opaque

    @property
    def writes(self) -> list[str]:
        return self._moved([w for c in self.commands for w in c.writes])

    def written(self, root: Path) -> list[str]:
        """The files the redirections write, a pattern (``> K*``) also as each file it names."""
        return _globbed(self.writes, root)

    def argument_writes(self, root: Path) -> list[str]:
        """The files the commands' own arguments write (``cp x KILN.md``, ``sed -i``), a copy
        into an existing folder under each source's name, a pattern (``sed -i … *.md``) also
        as each file it names now."""
        out = []
        for c in self.commands:
            through = c.name != "ln"  # the link `ln` makes is no write where it leads
            moved = [
                replace(copy, dest=p, sources=_sources(self._moved(list(copy.sources)), root))
                for copy in c.copies
                for p in self._moved([copy.dest], through)
            ]
            out += landing_paths(self._moved(list(c.arg_writes), through), moved, root)
        unpacked = [p for c in self.commands for u in c.unpacks for p in u.landing(root)[0]]
        return _globbed(out, root) + unpacked

    def made_names(self, root: Path | None = None) -> list[Made]:
        """The names ``split`` and ``csplit`` make after a prefix (``agent.made_names``) and
        the paths xargs's input or ``find -exec``'s ``{}`` fill in, also under each folder the
        line changes into; with ``root``, any name in the folder an archive or patch the check
        could not read unpacks into (yolo runs such a line: `unzip new.zip -d config`)."""
        made = [m for c in self.commands for m in made_by(c.argv)] + self.guessed
        if root is not None and self.unread(root):
            into = [u.into.rstrip("/") for c in self.commands for u in c.unpacks]
            made += [Made(f"{d}/" if d not in ("", ".") else "", unlisted=True) for d in into]
        named = [p for c in self.commands for p in (*c.writes, *c.arg_writes)]
        copies = [copy for c in self.commands for copy in c.copies]
        named += [copy.dest for copy in copies]
        landed = [f"{copy.dest.rstrip('/')}/{PurePosixPath(s).name}"  # under its own name
                  for copy in copies for s in copy.sources]  # fmt: skip
        for p in [*named, *landed]:  # xargs's input, or a file `find -exec … {}` found
            mark = XARGS_INPUT if XARGS_INPUT in p else "{}" if "{}" in p else None
            if mark is None:
                continue
            head, tail = p.split(mark)[0], p.split(mark)[-1]
            if mark == XARGS_INPUT and "/" in head and p in named:
                # `xargs -I{} cp x config/{}` given `../secrets/x`: any path at all
                made += [Made("", tail, unlisted=True)] + (
                    [Made("/", tail, unlisted=True)] if head.startswith("/") else []
                )
                continue
            # find's `{}` lies under its starting point: a link there may lead anywhere
            made.append(Made(head, tail, unlisted=True, walked=mark == "{}"))
        return [replace(m, prefix=p) for m in made for p in self._moved([m.prefix])]

    def _moved(self, paths: list[str], through: bool = True) -> list[str]:
        """Each relative path as written and under every folder the line changes into: after
        ``cd config``, ``> app.yml`` writes ``config/app.yml`` (where in the line is not told
        apart, so both are checked)."""
        relative = [p for p in paths if not p.startswith(("/", "~"))]
        moved = [
            *paths,
            *(os.path.join(d, p) for d in dict.fromkeys(self.cd) if d for p in relative),
        ]
        for name, target in self._links() if through else []:  # `ln -s config c && cp x c/y`
            moved += [os.path.normpath(target + p[len(name) :]) for p in list(moved)
                      if p == name or p.startswith(name.rstrip("/") + "/")]  # fmt: skip
        return moved

    def _links(self) -> list[tuple[str, str]]:
        """(link, where it leads) for each symbolic link the line makes (``ln -s TARGET
        LINK``): a write through it lands there, though neither exists when it is checked."""
        out = []
        for c in self.commands:
            flags = "".join(a[1:] for a in c.argv[1:] if a[:1] == "-" and a[:2] != "--")
            if c.name != "ln" or not ("s" in flags or "--symbolic" in c.argv):
                continue
            for copy in c.copies:
                for source in copy.sources:
                    link = copy.dest.rstrip("/")
                    link += f"/{PurePosixPath(source).name}" if copy.folder else ""
                    base = os.path.dirname(link)
                    out.append(
                        (link, source if source.startswith("/") else os.path.join(base, source))
                    )
            operands = [a for a in c.argv[1:] if a[:1] != "-"]
            if not c.copies and len(operands) == 1:  # `ln -s ../config`: a link `config` here
                out.append((PurePosixPath(operands[0].rstrip("/")).name, operands[0]))
        return out

    def unread(self, root: Path) -> list[str]:
        """Why an archive or patch the line unpacks cannot vouch for what it writes: it cannot
        be read now, or another part of the line could change it before it is unpacked; or a
        pattern it writes names more files than are checked one by one."""
        reasons = [why for c in self.commands for u in c.unpacks if (why := u.landing(root)[1])]
        written = [*self.writes, *(p for c in self.commands for p in c.arg_writes),
                   *(p for c in self.commands for copy in c.copies for p in copy.sources)]  # fmt: skip
        reasons += [f"{p} names more than {MAX_MATCHES} files" for p in self._moved(written)
                    if len(matches(p, root)) > MAX_MATCHES]  # fmt: skip
        copied = [s for c in self.commands for copy in c.copies for s in copy.sources]
        reasons += [f"{p} holds more than {MAX_FOLDER_FILES} files" for p in _sources(copied, root)
                    if len(folder_files(p, root)) > MAX_FOLDER_FILES]  # fmt: skip
        if self.cd and any(c.unpacks for c in self.commands):
            reasons.append("it unpacks after changing folders")
        if not reasons and any(c.unpacks for c in self.commands):
            others = [
                c
                for c in self.commands
                if not c.unpacks
                and c.argv
                and c.argv[0] not in WRAPPERS  # as written: `./ls` is the repository's program
                and (
                    c.argv[0] not in _WRITE_NOTHING
                    or c.writes
                    or c.copies
                    or (c.arg_writes and c.argv[0] != "mkdir")
                )  # the folders mkdir makes change no archive
            ]
            if others or any(c.writes for c in self.commands):
                reasons.append(f"{others[0].text if others else 'a redirection'} could change "
                               "the archive or patch it unpacks first")  # fmt: skip
        return reasons

    def describe(self) -> str:
        """One line per simple command, for permission prompts."""
        lines = []
        for c in self.commands:
            written = [*c.writes, *c.arg_writes, *(copy.dest for copy in c.copies),
                       *(u.shown for u in c.unpacks)]  # fmt: skip
            lines.append(f"- {c.text}" + (f"  (writes {', '.join(written)})" if written else ""))
        lines += [f"- not understood: {why}" for why in self.opaque]
        return "\n".join(lines)


def _globbed(paths: list[str], root: Path) -> list[str]:
    """Each path, and the files it names now when it is a pattern bash expands."""
    return [*paths, *(m for p in paths for m in matches(p, root))]


def _sources(paths: list[str], root: Path) -> tuple[str, ...]:
    """What a copy's sources are to bash: a pattern's files, or the pattern if none match."""
    return tuple(m for p in paths for m in (matches(p, root) or [p]))
