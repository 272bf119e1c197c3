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
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut(text, limit))


def cut(text: str, limit: int = 200) -> str:
    """``text`` of at most ``limit`` characters: a longer one as its start, "…" and its end
    (escaping is left to the caller, for text that is JSON-encoded next)."""
    if len(text) <= limit:
        return text
    tail = min(TAIL, limit // 2)
    return text[: limit - tail - 1] + "…" + text[-tail:]
