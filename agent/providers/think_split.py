"""Reasoning text apart from the answer, for OpenAI-compatible servers.

Reasoning servers send their thinking either as ``reasoning_content`` (vLLM, llama.cpp,
DeepSeek) or ``reasoning`` (Ollama, OpenRouter) deltas, or inline, as a ``<think>…</think>``
block that opens the reply's text (a server without a reasoning parser). Either way it is
thinking: shown as such, never stored or sent back as the assistant's answer.
"""

from __future__ import annotations

OPEN, CLOSE = "<think>", "</think>"


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that begins ``tag`` (a tag split across chunks)."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


class ThinkSplitter:
    """Feeds streamed text; returns ``(kind, text)`` pieces, kind ``"thinking"`` or ``"text"``."""

    def __init__(self) -> None:
        self.state = "start"  # start -> think -> after -> text, or start -> text
        self.buffer = ""

    def feed(self, chunk: str) -> list[tuple[str, str]]:
        self.buffer += chunk
        out: list[tuple[str, str]] = []
        while self.buffer:
            if self.state == "start":
                head = self.buffer.lstrip()
                if not head or (len(head) < len(OPEN) and OPEN.startswith(head)):
                    break  # not decided yet
                if head.startswith(OPEN):
                    self.state, self.buffer = "think", head[len(OPEN) :]
                else:
                    self.state = "text"
            elif self.state == "think":
                end = self.buffer.find(CLOSE)
                if end >= 0:
                    if end:
                        out.append(("thinking", self.buffer[:end]))
                    self.state, self.buffer = "after", self.buffer[end + len(CLOSE) :]
                    continue
                keep = _partial_suffix(self.buffer, CLOSE)
                if len(self.buffer) > keep:
                    out.append(("thinking", self.buffer[: len(self.buffer) - keep]))
                self.buffer = self.buffer[len(self.buffer) - keep :]
                break
            elif self.state == "after":  # the blank lines between the thinking and the answer
                self.buffer = self.buffer.lstrip()
                if self.buffer:
                    self.state = "text"
            else:
                out.append(("text", self.buffer))
                self.buffer = ""
        return out

    def finish(self) -> list[tuple[str, str]]:
        """What is still held when the stream ends."""
        rest, self.buffer = self.buffer, ""
        if not rest or self.state == "after":
            return []
        return [("thinking" if self.state == "think" else "text", rest)]


def split_orphan_close(text: str) -> tuple[str, str]:
    """(thinking, answer) of a reply whose ``<think>`` was in the prompt (chat templates that
    open it for the model), so only ``</think>`` came back; ("", text) otherwise."""
    if CLOSE in text and OPEN not in text:
        thinking, _, answer = text.partition(CLOSE)
        return thinking, answer.lstrip()
    return "", text
