"""Text for a terminal: what `kiln run` prints is the model's text, its commands and the
repository's file text, any of which may carry control characters. A carriage return or an ANSI
sequence could hide the part of a command being approved behind a harmless one; OSC sequences set
the window title or write the clipboard; bidi controls reorder what is shown. Each such character
is printed escaped (``\\x1b``, ``\\r``, ``\\u202e``); newlines and tabs stay."""

from __future__ import annotations

import json
from typing import TextIO

_KEEP = frozenset("\n\t")
TITLE_CHARS = 80  # a tool call's title, as a card, a tool call or a question shows it


def safe(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control or formatting character escaped; with ``one_line`` new lines
    and tabs too (a title: a file name with new lines must not push its end out of sight)."""
    if text.isprintable():
        return text
    keep = frozenset() if one_line else _KEEP
    return "".join(c if c.isprintable() or c in keep else json.dumps(c)[1:-1] for c in text)


def title_line(text: str) -> str:
    """A tool call's title on one line, escaped by ``safe`` and then cut to ``TITLE_CHARS``
    keeping both ends: the end of a name says which file it is, and escaping a new line doubles
    its width (cut first, a name with many new lines lost its end)."""
    shown = safe(text, one_line=True)
    if len(shown) <= TITLE_CHARS:
        return shown
    head = (TITLE_CHARS - 1) // 2
    return f"{shown[:head]}…{shown[head + 1 - TITLE_CHARS :]}"


def styled_stream(stream: TextIO) -> TextIO:
    """The stream under ``stream`` when it escapes every control character (the terminal guard
    of ``lsp_server.cli.tty_guard``), else ``stream``: for rich, whose colours and progress bars
    are Kiln's own escapes. Whatever text goes there from outside must pass ``safe`` first."""
    return getattr(stream, "unescaped", stream)
