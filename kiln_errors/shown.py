"""A name from outside Kiln (a path, a URI, a host, a query) as it stands in a one-line error.

Such a name can hold a newline or an escape, which would break the line or hide what it says,
and can run to thousands of characters. Every package quotes them the same way, so this lives
in the leaf all of them import.
"""

from __future__ import annotations

TAIL = 20  # characters of a long name's end kept: a path's file name, a URI's last segment


def shown(text: str, limit: int = 200) -> str:
    """``text`` as one printable line of about ``limit`` characters at most: each control
    character as its escape (``\\n``, ``\\x1b``), a longer text as its start, "…" and its end."""
    if len(text) > limit:
        tail = min(TAIL, limit // 2)
        return _printable(text[: limit - tail - 1]) + "…" + _printable(text[-tail:])
    return _printable(text)


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
