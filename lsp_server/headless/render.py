"""Renderers for `kiln run`: a rich terminal view, one JSON event per line, or nothing (json).
Rich is imported by the terminal view only (~20 ms the JSON formats need not pay)."""

from __future__ import annotations

import errno
import functools
import io
import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any, assert_never

from agent.events import (
    AgentEvent,
    Compacted,
    EditProposed,
    ErrorReported,
    Event,
    MemoryProposed,
    PermissionAsked,
    PlanUpdated,
    Refused,
    StatusNote,
    TextChunk,
    ThoughtChunk,
    ToolCallFinished,
    ToolCallRunning,
    ToolCallStarted,
    TurnDone,
    UsageReported,
)
from lsp_server.headless.terminal import safe, styled_stream, title_line
from lsp_server.headless.workflow_commands import active, neutral_json

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


@functools.cache
def _stderr_console() -> type[Console]:
    from rich.console import Console

    class StderrConsole(Console):
        def on_broken_pipe(self) -> None:
            """The reader of stderr left (`kiln run … 2>&1 | head`): the run ends as when the
            reader of stdout leaves (exit 141). Rich's own handler pointed stdout at /dev/null
            and exited 1, the code of an internal failure."""
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "the reader of stderr left")

    return StderrConsole


class TextRenderer:
    """Assistant text to stdout as it streams; tool calls and status to stderr.

    Model and tool text is never parsed as rich markup (a grep pattern such as ``[/a-z]`` is
    text): every line is a ``Text`` built from plain strings and styles.
    """

    def __init__(self) -> None:
        # no hard wraps in CI logs; every line's text is ``safe``, its styles are Kiln's own
        self.err = _stderr_console()(
            file=styled_stream(sys.stderr), stderr=True, highlight=False, soft_wrap=True
        )
        self.at_line_start = True

    def __call__(self, event: AgentEvent) -> None:
        if event.parent_tool_call_id:  # a sub-agent's step: the task's line shows its result
            return
        if isinstance(event, TextChunk):
            sys.stdout.write(safe(event.text))
            sys.stdout.flush()
            self.at_line_start = event.text.endswith("\n")
            return
        if not self.at_line_start:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.at_line_start = True
        line = self.line(event)
        if line is not None:
            self.err.print(line)

    def line(self, event: AgentEvent) -> Text | None:
        """The stderr line for an event, or None for events this view leaves out."""
        from rich.text import Text

        match event:
            case TextChunk(text=text):
                return Text(safe(text))
            case ToolCallStarted(title=title):
                return Text(f"▶ {title_line(title)}", style="cyan")
            case ToolCallFinished():
                shown = [
                    x
                    for x in safe(event.output).strip().splitlines()
                    if not x.startswith(("<external_content", "</external_content"))
                ]
                detail = shown[0][:120] if shown else ""
                if event.is_error:
                    detail = next((x for x in shown if x.startswith("message:")), detail)[:160]
                mark = Text("✗", style="red") if event.is_error else Text("✓", style="green")
                return Text.assemble(
                    "  ", mark, f" {title_line(event.name)} ({event.duration_ms} ms) {detail}"
                )
            case Refused(tool=tool, reason=reason):
                return Text(f"⛔ refused {title_line(tool)}: {safe(reason)}", style="yellow")
            case PlanUpdated(entries=entries):
                boxes = {"completed": "☑", "in_progress": "▣"}
                return Text(
                    "\n".join(
                        f"  {boxes.get(item.get('status', ''), '☐')} {safe(str(item.get('content', '')))}"
                        for item in entries
                    )
                )
            case StatusNote(text=text):
                return Text(safe(text), style="dim")
            case Compacted():
                return Text(
                    f"compacted (tier {event.tier}): {event.before_tokens} -> "
                    f"{event.after_tokens} tokens, {event.removed_messages} messages archived",
                    style="dim",
                )
            case ErrorReported(message=message, hint=hint):
                # The hint is the what-to-do half (which variable to check, how to start over).
                tail = f" ({safe(hint)})" if hint and hint not in message else ""
                return Text(f"error: {safe(message)}{tail}", style="red")
            case (
                EditProposed()
                | ThoughtChunk()  # thinking is not printed in the text view (stream-json has it)
                | UsageReported()
                | PermissionAsked()
                | MemoryProposed()
                | TurnDone()
                | ToolCallRunning()
            ):
                return None  # shown by the run report at the end, or by the tool call line
            case _:
                assert_never(event)


class StreamJsonRenderer:
    """One JSON object per line on stdout, for log viewers and pipelines."""

    def __call__(self, event: Event) -> None:
        if isinstance(event, TextChunk) and not event.text:
            return
        print_json({"type": event.kind, **event.to_dict()}, indent=None)


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(obj: Any, indent: int | None = None) -> str:
    """JSON that is valid UTF-8 whatever it holds: a file name that is not UTF-8 reaches the
    report as lone surrogates (``\\udce9`` for byte 0xe9), which are written as escapes."""
    text = json.dumps(obj, indent=indent, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def print_json(obj: dict[str, Any], indent: int | None = 2) -> None:
    """One JSON document on stdout; under GitHub Actions with no ``##[`` in it."""
    text = json_text(obj, indent)
    sys.stdout.write((neutral_json(text) if active() else text) + "\n")
    sys.stdout.flush()


BROKEN_PIPE = 141  # the exit a shell reports for a command SIGPIPE ended


def whole_writes() -> None:
    """Under PYTHONUNBUFFERED (``-u``, common in CI jobs) ``sys.stdout`` writes straight to the
    file and drops, without an error, what a pipe took only part of: a reader that left during
    a long result went unnoticed. A buffered writer under it writes all, or raises
    ``BrokenPipeError``; Kiln flushes after each thing it prints, so nothing waits in it."""
    out = sys.stdout
    raw = getattr(out, "buffer", None)
    if isinstance(out, io.TextIOWrapper) and isinstance(raw, io.RawIOBase):
        sys.stdout = io.TextIOWrapper(
            io.BufferedWriter(raw), encoding=out.encoding, errors=out.errors, write_through=True
        )


class ReaderGone:
    """Whether the reader of the output left. The run then ends as cancelled, its outputs
    (summary, patch, report) written, and exits 141; what it would print goes to /dev/null."""

    left = False

    def leave(self) -> None:
        self.left = True
        for fd in (1, 2):
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
            except OSError:
                pass
