"""Secret values kept out of what `kiln run --ci` prints as it goes (the CI log): every event is
redacted before a renderer sees it, as the transcript, patch and summary are. The prose outputs
(the log, transcript, summary, report, commit message) also lose each word of a credential's shape
(``ghp_…``, ``sk-…``: ``agent.env_secrets.SHAPED``), as stored sessions are shown; the patch
and the committed tree carry the change as made, so that the patch applies.

Streamed text needs more than a replace per event: a model's answer arrives in chunks, and a
secret split across two of them (``"… hunte"``, ``"r2hunter2 …"``) matches in neither. The
end of a chunk that could begin a secret is held back until the next chunk (or any other event,
or the end of the run) shows whether it does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

from agent.env_secrets import SHAPED
from agent.events import Event, TextChunk, ThoughtChunk

Sink = Callable[[Event], None]
LAST_WORD = re.compile(r"\S*$")  # streamed, a token-shaped word may go on in the next chunk


def shapes(value: Any) -> Any:
    """``value`` (a string, or each string in a JSON value) with each word of a credential's
    shape as ``[REDACTED]``."""
    return each_string(value, lambda text: SHAPED.sub("[REDACTED]", text))


def each_string(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (a string, or a JSON value) with ``change`` made to each string in it."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {k: each_string(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [each_string(v, change) for v in value]
    return value


class RedactedEvents:
    """A sink that passes each event on with every secret value replaced by its name."""

    def __init__(self, secrets: list[tuple[str, str]], sink: Sink, shaped: bool = False) -> None:
        self.secrets = secrets  # (name, value), longest value first
        self.shaped = shaped  # token-shaped words too (--ci)
        self.sink = sink
        self.held: TextChunk | ThoughtChunk | None = None  # text that may begin a secret

    def redact(self, value: Any) -> Any:
        if isinstance(value, str):
            for name, secret in self.secrets:
                value = value.replace(secret, f"[REDACTED:{name}]")
            return shapes(value) if self.shaped else value
        if isinstance(value, dict):
            return {k: self.redact(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact(v) for v in value]
        return value

    def __call__(self, event: Event) -> None:
        if not self.secrets and not self.shaped:
            self.sink(event)
            return
        if isinstance(event, TextChunk | ThoughtChunk):
            held = self.held
            if held is not None and (type(held), held.parent_tool_call_id) == (
                type(event),
                event.parent_tool_call_id,
            ):
                event = replace(event, text=held.text + event.text)
                self.held = None
            self.flush()
            # the last word is held as it came: redacted now, a token's start would no longer
            # be one, and its rest in the next chunk would pass (``[REDACTED]`` + ``l2M3…``)
            word = LAST_WORD.search(event.text).group(0) if self.shaped else ""  # type: ignore[union-attr]
            text = self.redact(event.text[: len(event.text) - len(word)])
            keep = self._unfinished(text)
            if keep or word:
                self.held = replace(event, text=text[len(text) - keep :] + word)
                text = text[: len(text) - keep]
            if text:
                self.sink(replace(event, text=text))
            return
        self.flush()
        changed = {f.name: self.redact(getattr(event, f.name)) for f in fields(event)}
        self.sink(replace(event, **changed))

    def flush(self) -> None:
        """Pass on held text: what followed showed it begins no secret (a word held as it came,
        ended now, is redacted as any text)."""
        held, self.held = self.held, None
        if held is not None:
            self.sink(replace(held, text=self.redact(held.text)) if self.shaped else held)

    def _unfinished(self, text: str) -> int:
        """The length of the longest end of ``text`` that is the start of a secret."""
        longest = 0
        for _, secret in self.secrets:
            for n in range(min(len(secret) - 1, len(text)), longest, -1):
                if text.endswith(secret[:n]):
                    longest = n
                    break
        return longest
