"""Writes through a descriptor a redirection of the line opens: ``echo x > /dev/fd/3 3< KILN.md``.

Opening ``/dev/fd/N`` (or ``/proc/self/fd/N``, ``/dev/stdout``…) opens again the file behind
descriptor N, for writing if the redirection says so, whatever mode N was opened with: a file the
line only reads (``3< KILN.md``, ``exec 3<KILN.md``, ``< KILN.md`` for ``/dev/stdin``) is written
through it. So a write to such a path counts as a write to every file the line opens on that
descriptor anywhere (where in the line is not told apart), through copies (``3<&4``) too. One on
a descriptor above 2 that the line does not open, or opens on a path it computes, cannot be told:
the line is not understood. Descriptors 0 to 2 the line leaves alone are the command's own
output, as before (``agent.write_policy``: a device).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from agent.shell_command import ParsedCommand

# A path that opens a descriptor again: its number, or the name of a standard one.
_DESCRIPTOR_PATH = re.compile(r"/dev/fd/([0-9]+)|/proc/(?:self|thread-self)/fd/([0-9]+)"
                              r"|/dev/(stdin|stdout|stderr)")  # fmt: skip
_STANDARD = {"stdin": "0", "stdout": "1", "stderr": "2"}


def opened(
    node: Any, op: str, literal: str | None, target_type: str, glued: str | None = None
) -> list[tuple[str, str | None]]:
    """(descriptor, what it is opened on) for one file redirection: ``3< F`` is ("3", "F"),
    ``3<&4`` ("3", "&4"), ``&> F`` both 1 and 2; a close (``3<&-``) opens nothing. ``glued``:
    the number the grammar read as a word before it (``0<F``)."""
    number = next((c.text.decode() for c in node.children if c.type == "file_descriptor"), glued)
    if op in ("&>", "&>>") or (op == ">&" and target_type != "number" and number is None):
        fds = ["1", "2"]
    else:
        fds = [number or ("0" if op.startswith("<") else "1")]
    if literal == "-" and op in (">&", "<&"):
        return []
    what = f"&{literal}" if op in (">&", "<&") and target_type == "number" else literal
    return [(fd, what) for fd in fds]


def resolve_descriptors(parsed: ParsedCommand) -> ParsedCommand:
    """``parsed``, a write to a descriptor's path also a write to each file the line opens it on
    (``tee /dev/fd/3``, ``cp x /dev/stdout`` too); an unknown one makes the line not understood."""
    opens: dict[str, list[str | None]] = {}
    for fd, what in parsed.descriptors:
        opens.setdefault(fd, []).append(what)
    for i, command in enumerate(parsed.commands):
        named = [*command.writes, *command.arg_writes, *(c.dest for c in command.copies)]
        found: list[str] = []
        for path in named:
            number = _descriptor(path)
            if number is None:
                continue
            files = _files(number, opens, set())
            if files is None:
                parsed.opaque.append(f"writes to {path}: the line opens that descriptor on no "
                                     "file it names")  # fmt: skip
            found += [f for f in files or [] if f not in found]
        if found:
            parsed.commands[i] = replace(command, writes=(*command.writes, *found))
    return parsed


def _files(fd: str, opens: dict[str, list[str | None]], seen: set[str]) -> list[str] | None:
    """The files descriptor ``fd`` may be open on (through copies, and through a path that opens
    a descriptor again); None when the line does not tell."""
    if fd in seen:
        return []
    seen.add(fd)
    if fd not in opens:
        return [] if fd in ("0", "1", "2") else None
    out: list[str] = []
    for what in opens[fd]:
        if what is None:
            return None
        other = what[1:] if what.startswith("&") else _descriptor(what)
        inner = [what] if other is None else _files(other, opens, seen)
        if inner is None:
            return None
        out += inner
    return out


def _descriptor(word: str) -> str | None:
    """The descriptor a path names (``/dev/fd/3``: 3, ``/dev/stderr``: 2), if any."""
    match = _DESCRIPTOR_PATH.fullmatch(word)
    if match is None:
        return None
    return match.group(1) or match.group(2) or _STANDARD[match.group(3)]
