"""Every line a `kiln` command prints to a terminal goes through ``safe``. Much of what the
commands print comes from the repository: `kiln memory show` prints its memory files,
`kiln skills list` its skills' descriptions, `kiln sessions show` the command output and file
text of a transcript. An OSC 52 sequence in any of them writes the user's clipboard (a command
to paste later), OSC 0 sets the window title and ANSI sequences hide lines. Kiln itself never
prints a control character but newlines, tabs and the styles of its rich output (which writes
to ``unescaped``, its text passed through ``safe``), so escaping the whole stream covers the
commands that forget to. Output to a pipe or a file is left exact."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from lsp_server.headless.terminal import safe

# Their stdout is the JSON-RPC channel (its `\r\n` headers must stay), whatever it is.
EXACT_COMMANDS = frozenset({"lsp", "acp"})


class EscapingStream:
    """A text stream that writes to ``stream`` with control characters escaped. It has no
    ``buffer``: click would write bytes to that, past the escaping."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.unescaped = stream  # for rich's own styles (``terminal.styled_stream``)
        self.encoding = stream.encoding
        self.errors = stream.errors

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._stream.write(safe(text))
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._stream.fileno()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False


def _terminal(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):  # closed or detached
        return False


@contextmanager
def escaped_terminal(argv: list[str]) -> Iterator[None]:
    """While a command runs, stdout and stderr escape control characters where they are a
    terminal (not for ``EXACT_COMMANDS``)."""
    command = next((a for a in argv if not a.startswith("-")), "")
    saved = sys.stdout, sys.stderr
    if command not in EXACT_COMMANDS:
        if _terminal(sys.stdout):
            sys.stdout = EscapingStream(sys.stdout)  # type: ignore[assignment]
        if _terminal(sys.stderr):
            sys.stderr = EscapingStream(sys.stderr)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def workflow_log(argv: list[str]) -> Any:
    """Under GitHub Actions, stderr breaks workflow commands (``headless.workflow_commands``);
    `kiln run` guards its text stdout itself (JSON output is neutral JSON)."""
    from lsp_server.headless.workflow_commands import guarded

    command = next((a for a in argv if not a.startswith("-")), "")
    return guarded(stderr=command not in EXACT_COMMANDS)
