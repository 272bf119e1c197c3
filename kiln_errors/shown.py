"""A name from outside Kiln (a path, a URI, a host, a query) as it stands in a one-line error.

Such a name can hold a newline or an escape, which would break the line or hide what it says,
and can run to thousands of characters. Every package quotes them the same way, so this lives
in the leaf all of them import.
"""

from __future__ import annotations

import re

TAIL = 20  # characters of a long name's end kept: a path's file name, a URI's last segment


def shown(text: str, limit: int = 200) -> str:
    """``text`` as one printable line of about ``limit`` characters at most: each control
    character as its escape (``\\n``, ``\\x1b``), a longer text as its start, "…" and its end."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut(text, limit))


def cut(text: str, limit: int = 200) -> str:
    """``text`` of at most ``limit`` characters: a longer one as its start, "…" and its end
    (escaping is left to the caller, for text that is JSON-encoded next)."""
    if len(text) <= limit:
        return text
    tail = min(TAIL, limit // 2)
    return text[: limit - tail - 1] + "…" + text[-tail:]


def listed(name: str) -> str:
    """A file name as a tool lists it: one printable line, whole. A control character is its
    escape (``\\n``, ``\\t``, ``\\u0085``) and a byte that is not UTF-8 (decoded by the file system
    as a lone surrogate) is ``\\xff``; ``unlisted`` reads such a spelling back."""
    out = []
    for c in name:
        code = ord(c)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif c.isprintable():
            out.append(c)
        elif c in "\n\r\t":
            out.append(repr(c)[1:-1])
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


_UNESCAPE = re.compile(r"\\(?:([nrt])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))")


def unlisted(text: str) -> str | None:
    """The name ``listed`` showed as ``text``, or None when ``text`` holds no such escape. A model
    asks for a file by the spelling it was shown; the tools try this name when that one is not
    there (a file may be called ``a\\nb`` with a real backslash too)."""

    def one(m: re.Match[str]) -> str:
        letter, byte, short, wide = m.groups()
        if letter:
            return {"n": "\n", "r": "\r", "t": "\t"}[letter]
        if byte:
            code = int(byte, 16)
            return chr(code) if code < 0x80 else chr(0xDC00 + code)
        code = int(short or wide, 16)
        return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else m.group()

    name = _UNESCAPE.sub(one, text)
    return None if name == text else name
