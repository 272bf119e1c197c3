"""What ``cpio`` and ``7z`` write: the folder ``cpio -i`` (``-D DIR``), ``cpio -p DIR`` and
``7z x -oDIR`` unpack into, and the archive ``cpio -o -F FILE`` and ``7z a FILE`` write. The
check cannot read these archives, so ``agent.unpack_writes`` makes an unpack of one not
understood (refused in ``ci``) and ``agent.option_writes`` meets any name in its folder with the
deny rules. Before, none of these was read: ``7z x -oconfig`` and ``cpio -i`` wrote past a
``Write(config/*.yml)`` deny rule in ``yolo``.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from agent.shell_wrappers import long_option

SEVEN_ZIP = {"7z", "7za", "7zr", "7zz"}
_CPIO_LONG = {"--extract": "i", "--create": "o", "--pass-through": "p", "--list": "t",
              "--file": "F", "--directory": "D", "--format": "H", "--pattern-file": "E",
              "--message": "M", "--owner": "R", "--io-size": "C", "--rsh-command": "r"}  # fmt: skip


def _cpio(args: list[str]) -> tuple[str, dict[str, str], list[str]]:
    """cpio's modes (``i``, ``o``, ``p``, ``t``), its valued options' values by letter, its
    operands."""
    modes, values, operands, i = "", {}, [], 0
    while i < len(args):
        key, eq, value = args[i].partition("=")
        letters = _CPIO_LONG.get(long_option(key, _CPIO_LONG), "") if key[:2] == "--" else key[1:]
        if not key.startswith("-") or key == "-":
            operands.append(args[i])
        for j, ch in enumerate(letters if key.startswith("-") and key != "-" else ""):
            if ch in "FIODHEMRCr":
                rest = args[i][j + 2 :] if key[:2] != "--" else value if eq else ""
                if not rest and i + 1 < len(args):
                    rest, i = args[i + 1], i + 1
                values[ch] = rest
                break
            modes += ch
        i += 1
    return modes, values, operands


def archive_folder(name: str, args: list[str]) -> str | None:
    """The folder ``cpio -i`` (``-D DIR``), ``cpio -p DIR`` and ``7z x``/``e`` (``-oDIR``)
    unpack into, whose names only the archive knows (None: nothing unpacked)."""
    if name == "cpio":
        modes, values, operands = _cpio(args)
        if "t" in modes:
            return None
        if "p" in modes:
            return operands[0] if operands else "."
        return values.get("D", ".") if "i" in modes else None
    if name in SEVEN_ZIP and [a for a in args if not a.startswith("-")][:1] in (["x"], ["e"]):
        if "-so" in args:
            return None
        return ([a[2:] for a in args if a.startswith("-o") and len(a) > 2] or ["."])[-1]
    return None


def archive_written(name: str, args: list[str]) -> list[str]:
    """The archive ``cpio -o -F FILE`` (``-O FILE``) and ``7z a``/``u``/``d``/``rn`` write."""
    if name == "cpio":
        modes, values, _ = _cpio(args)
        return [values[k] for k in "FO" if k in values] if "o" in modes else []
    operands = [a for a in args if not a.startswith("-")]
    if name not in SEVEN_ZIP or operands[:1] not in (["a"], ["u"], ["d"], ["rn"]):
        return []
    archive = operands[1:2]
    return archive + [f"{a}.7z" for a in archive if not PurePosixPath(a).suffix]


def archive_read(name: str, args: list[str]) -> str | None:
    """The archive ``cpio -i -F FILE`` (``-I FILE``; None: stdin) or ``7z x FILE`` reads."""
    if name == "cpio":
        values = _cpio(args)[1]
        return values.get("F", values.get("I"))
    operands = [a for a in args if not a.startswith("-")]
    return operands[1] if len(operands) > 1 else None
