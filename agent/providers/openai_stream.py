"""Gathering an OpenAI Chat Completions stream into Kiln's stream items and one reply.

Text and reasoning stream out as they come (a ``<think>`` block some local models write in
the text is told apart from the answer); tool-call pieces are gathered by index, so parallel
calls come out whole, each with an id of its own; the finish reason and usage close the reply.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from agent.providers.arguments import parse_arguments
from agent.providers.think_split import ThinkSplitter, split_orphan_close
from agent.types import (
    INVALID_JSON,
    RAW_INPUT,
    Block,
    Message,
    ModelReply,
    StreamItem,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    Usage,
)

_FINISH = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


class ChunkAccumulator:
    """Gathers streamed chunks: text, tool calls by index, the finish reason and usage."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage = Usage()
        self.ids: set[str] = set()
        self.thinking: list[str] = []
        self.split = ThinkSplitter()
        self.refused = False  # the model declined (``delta.refusal``)

    def _text(self, pieces: list[tuple[str, str]]) -> list[StreamItem]:
        items: list[StreamItem] = []
        for kind, text in pieces:
            if kind == "thinking":
                self.thinking.append(text)
                items.append(ThinkingDelta(text))
            else:
                self.text.append(text)
                items.append(TextDelta(text))
        return items

    def _slot(self, tc: Any) -> dict[str, Any]:
        """The call a streamed piece belongs to: by ``index``; without one (some compatible
        servers omit it), a piece with a new id or a name starts a call, any other continues
        the latest."""
        if tc.index is not None:
            index = tc.index
        else:
            last = max(self.calls, default=None)
            name = tc.function.name if tc.function is not None else None
            same = last is not None and (not tc.id or tc.id == self.calls[last]["id"])
            index = last if last is not None and same and not name else len(self.calls)
        return self.calls.setdefault(
            index, {"id": None, "name": "", "args": [], "announced": False}
        )

    def _unique(self, call_id: str | None) -> str:
        """The server's id unless it is missing or already used in this reply (some compatible
        servers send none, or the same one for every call): results are matched by id."""
        if not call_id or call_id in self.ids:
            call_id = f"call_{uuid.uuid4().hex[:24]}"
        self.ids.add(call_id)
        return call_id

    def feed(self, chunk: Any) -> list[StreamItem]:
        items: list[StreamItem] = []
        self.model = getattr(chunk, "model", None) or self.model
        if chunk.usage is not None:
            self._take_usage(chunk.usage)
        for choice in chunk.choices or []:
            delta = choice.delta
            extra = (delta.model_extra or {}) if delta is not None else {}
            reasoning = extra.get("reasoning_content") or extra.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                items += self._text([("thinking", reasoning)])
            if delta is not None and delta.content:
                items += self._text(self.split.feed(delta.content))
            refusal = getattr(delta, "refusal", None) if delta is not None else None
            if isinstance(refusal, str) and refusal:  # said instead of content: shown as the answer
                self.refused = True
                items += self._text([("text", refusal)])
            for tc in (delta.tool_calls if delta is not None else None) or []:
                slot = self._slot(tc)
                if tc.id and not slot["announced"]:
                    slot["id"] = tc.id
                if tc.function is not None:
                    if tc.function.name:
                        slot["name"] = tc.function.name
                    args = tc.function.arguments
                    if args and not isinstance(args, str):
                        args = json.dumps(args, ensure_ascii=False)  # an object, not JSON text
                        slot["object"] = True  # so no text the model wrote to send back
                    if args:
                        slot["args"].append(args)
                if slot["name"] and not slot["announced"]:
                    slot["id"] = self._unique(slot["id"])
                    slot["announced"] = True
                    items.append(ToolCallDelta(slot["id"], slot["name"]))
            if choice.finish_reason:
                self.finish = choice.finish_reason
        return items

    def _take_usage(self, usage: Any) -> None:
        details = getattr(usage, "prompt_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
        prompt = int(usage.prompt_tokens or 0)
        self.usage = Usage(
            input_tokens=max(0, prompt - cached),
            cache_read_tokens=cached,
            output_tokens=int(usage.completion_tokens or 0),
        )

    def flush(self) -> list[StreamItem]:
        """Text held back while a ``<think>`` tag could still be starting or ending."""
        return self._text(self.split.finish())

    def reply(self) -> ModelReply:
        content: list[Block] = []
        text = "".join(self.text)
        if not self.thinking:
            thought, text = split_orphan_close(text)  # only ``</think>`` came back
            if thought:
                self.thinking.append(thought)
        if text:
            content.append({"type": "text", "text": text})
        for _, call in sorted(self.calls.items()):
            raw = "".join(call["args"])
            block: Block = {
                "type": "tool_use",
                "id": call["id"] if call["announced"] else self._unique(call["id"]),
                "name": call["name"],
                "input": parse_arguments(raw),
            }
            if raw.strip() and INVALID_JSON not in block["input"] and not call.get("object"):
                block[RAW_INPUT] = raw  # re-sent as written (see openai._arguments_json)
            content.append(block)
        stop = _FINISH.get(self.finish or "stop", self.finish or "end_turn")
        if stop == "end_turn" and self.calls:
            stop = "tool_use"  # some compatible servers say "stop" even after tool calls
        if self.refused and stop == "end_turn":
            stop = "refusal"  # the finish reason says "stop"; the reply says it declined
        message: Message = {"role": "assistant", "content": content}
        return ModelReply(message=message, usage=self.usage, stop_reason=stop, model=self.model)
