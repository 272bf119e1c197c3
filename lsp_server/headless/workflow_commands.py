"""GitHub Actions reads workflow commands out of a step's log: a line whose first non-blank
characters are ``::`` (``::error file=…::``, ``::add-mask::``, ``::stop-commands::``,
``::add-matcher::``, ``::set-output``) and ``##[command]`` anywhere in a line (the runner's older
form); Azure Pipelines reads ``##vso[command]`` and ``##[command]``, TeamCity
``##teamcity[message]``, anywhere in a line. What
`kiln run` prints carries the model's text, the repository's file names and text, and command
output, so under any of them (``GITHUB_ACTIONS=true``, ``TF_BUILD=True``, ``TEAMCITY_VERSION``)
each such spot is broken before it reaches the log: a ``:`` that begins a line is printed ``\\:``,
and ``[`` after ``##``, ``##vso`` or ``##teamcity`` is printed ``\\[``. JSON output stays JSON: its lines never begin with ``:``, and
``#`` inside its strings is written ``\\u0023`` where it would make one of those.

Writing per character with the state of the line so far (not per ``write``) holds when text
arrives in pieces, as a streamed reply does: ``:`` then ``:error::``.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

# characters the runner ends a line at (\r, \n), and others that some readers do
_BREAKS = frozenset("\r\n\x85\u2028\u2029")


def active() -> bool:
    """Under GitHub Actions, or Azure Pipelines (``TF_BUILD``), whose agent reads ``##vso[…]``
    anywhere in a line (``task.setvariable`` sets a variable of every later step, ``PATH``
    included; ``task.complete`` ends the step as it says) and ``##[…]`` as GitHub does, or
    TeamCity (``TEAMCITY_VERSION``), whose ``##teamcity[setParameter …]`` does the same."""
    return (
        os.environ.get("GITHUB_ACTIONS") == "true"
        or os.environ.get("TF_BUILD", "").lower() == "true"
        or bool(os.environ.get("TEAMCITY_VERSION"))
    )


_JSON_COMMAND = re.compile(r"##(?=(?:vso|teamcity)?\[)", re.IGNORECASE)
_PREFIXES = ("##", "##vso", "##teamcity")


def neutral_json(text: str) -> str:
    """JSON text that holds no ``##[`` or ``##vso[`` (``#`` occurs only inside its strings)."""
    return _JSON_COMMAND.sub("#\\\\u0023", text)


class _LineState:
    def __init__(self) -> None:
        self.blank = True  # nothing but whitespace since the line began
        self.tail = ""  # the last characters of the line, lower case
        self.lock = threading.Lock()

    def neutralise(self, text: str) -> str:
        out: list[str] = []
        with self.lock:
            for c in text:
                if (c == ":" and self.blank) or (c == "[" and self.tail.endswith(_PREFIXES)):
                    out.append("\\")
                out.append(c)
                if c in _BREAKS:
                    self.blank = True
                elif not c.isspace():
                    self.blank = False
                self.tail = (self.tail + c.lower())[-10:]
        return "".join(out)


class CommandGuard:
    """A text stream writing to ``stream`` with workflow commands broken. Like the terminal's
    ``EscapingStream`` it has no ``buffer`` (click would write bytes there, past it), and its
    ``unescaped`` (for rich's styles, and what MCP servers' stderr is relayed through) is
    guarded too."""

    def __init__(self, stream: TextIO, state: _LineState | None = None) -> None:
        self._stream = stream
        self._state = state or _LineState()
        self.encoding = stream.encoding
        self.errors = stream.errors
        inner = getattr(stream, "unescaped", None)
        self.unescaped = CommandGuard(inner, self._state) if inner is not None else self

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._stream.write(self._state.neutralise(text))
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:  # closed, mode, name… as the stream has them
        if name == "buffer":  # bytes written there would pass the guard
            raise AttributeError(name)
        return getattr(self._stream, name)


@contextmanager
def guarded(stdout: bool = False, stderr: bool = True) -> Iterator[None]:
    """While it lasts, under GitHub Actions, the chosen streams break workflow commands."""
    saved = sys.stdout, sys.stderr
    if active():
        if stderr:
            sys.stderr = CommandGuard(sys.stderr)  # type: ignore[assignment]
        if stdout:
            sys.stdout = CommandGuard(sys.stdout)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
