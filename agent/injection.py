"""Injection defence, the part that follows the context: is third-party text in front of the model?

Tools wrap file contents, command output, search hits, web pages and third-party skill text in
``<external_content>``; the permission rules then ask before risky actions taken "from external
content". The session resets its flag at each user turn, but the text itself stays in the
context until compaction removes it, so an instruction read in turn 1 can still steer turn 2.
``TaintTracker`` keeps the flag true for as long as such text is in the request, including a
sub-agent's answer (its retelling of files it read, wrapped too; a session stored before that was
so holds it bare after its ``sub-agent <id>`` line).
"""

from __future__ import annotations

from typing import Any

from agent.protocols import SessionView
from agent.types import Message
from kiln_errors.shown import listed
from skills_registry.skill import defused  # the one spelling rule for both wrappers

MARKER = "<external_content"
SUBAGENT_PREFIX = "sub-agent "  # how agent.subagent introduces a sub-agent's answer


def external(source: str, text: str) -> str:
    """Tag third-party text as data: the system prompt tells the model never to obey it."""
    # The source names a path or a command, and a repository picks its paths: on one line, no
    # quote to end the attribute, no closing tag (a folder "a\n<" holding "external_content>"),
    # and no character a reader does not see as written (a carriage return, an escape, a bidi
    # mark, a line separator): each is shown as its escape, "\n" as "\\n".
    # A byte of a name that is not UTF-8 is "\xff", as the file tools list the name (``listed``).
    safe_source = listed(defused(source.replace('"', "'")))
    # A closing tag inside the content must not end the wrapper early, in any spelling a model
    # would still read as one (case, spaces, a newline, attributes, an encoding such as
    # "&lt;/external_content&gt;"): its "<", as written, becomes "[".
    body = defused(text)
    return f'<external_content source="{safe_source}">\n{body}\n</external_content>'


def has_external(message: Message) -> bool:
    """Whether any block of the message carries wrapped third-party text."""
    for block in message.get("content", []):
        for key in ("text", "content"):
            value: Any = block.get(key)
            if isinstance(value, str) and MARKER in value:
                return True
            if isinstance(value, list) and any(
                has_external({"content": [v]}) for v in value if isinstance(v, dict)
            ):
                return True
    return False


def from_outside(message: Message) -> bool:
    """Whether the message holds text from outside the user's trust: wrapped, or a sub-agent's
    retelling."""
    return has_external(message) or _has_subagent_result(message)


def _has_subagent_result(message: Message) -> bool:
    """A ``task`` answer is a sub-agent's retelling of files it read: third-party text too, which
    sessions stored before it was wrapped hold bare (after a ``sub-agent <id>`` header)."""
    return any(
        block.get("type") == "tool_result"
        and isinstance(block.get("content"), str)
        and block["content"].startswith(SUBAGENT_PREFIX)
        for block in message.get("content", [])
    )


class TaintTracker:
    """Session extension: before each request, mark the session tainted while external text is
    in the context. Scans only messages appended since the last look (the trajectory is
    append-only within an epoch) and starts over when a compaction opens a new epoch."""

    def __init__(self) -> None:
        self._epoch = -1
        self._seen = 0
        self._found = False

    def tail_block(self, session: SessionView) -> None:
        return None

    async def aclose(self) -> None:
        pass

    async def before_request(self, session: SessionView) -> None:
        if session.transcript.epoch != self._epoch or len(session.transcript.messages) < self._seen:
            self._epoch, self._seen, self._found = session.transcript.epoch, 0, False
        if not self._found:
            self._found = any(from_outside(m) for m in session.transcript.messages[self._seen :])
        self._seen = len(session.transcript.messages)
        if self._found:
            session.turn.tainted = True
