"""Provider-neutral data the harness passes around: messages, tool specs, requests, usage.

Messages are plain JSON-able dicts in the Anthropic Messages shape, because it is the richer of
the two wire formats (the OpenAI provider converts on the way out). Storing plain dicts and
serialising them with ``canonical_json`` is what lets a resumed session replay byte-identical
requests.

    {"role": "user", "content": [{"type": "text", "text": "..."}]}
    {"role": "assistant", "content": [{"type": "text", "text": "..."},
                                      {"type": "tool_use", "id": "t1", "name": "read_file",
                                       "input": {...}}]}
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                  "content": "...", "is_error": false}]}
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Message = dict[str, Any]
Block = dict[str, Any]

# Key of a tool_use ``input`` holding arguments that were not a JSON object, kept raw so the
# tool runner can tell the model (``agent.providers.arguments.parse_arguments``).
INVALID_JSON = "__invalid_json__"
# A tool_use block's arguments as the model wrote them (OpenAI-compatible replies), re-sent
# verbatim; providers that take an object instead leave the key out of their requests.
RAW_INPUT = "raw_input"


def canonical_json(value: Any) -> str:
    """One serialisation everywhere: stable key order, no whitespace, UTF-8 kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def text_block(text: str) -> Block:
    return {"type": "text", "text": text}


def user_message(text: str) -> Message:
    return {"role": "user", "content": [text_block(text)]}


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


def tool_reference(name: str) -> Block:
    """A ``tool_result`` content block that loads the deferred tool ``name`` (Anthropic)."""
    return {"type": "tool_reference", "tool_name": name}


@dataclass
class ToolOutput:
    """A tool result with more than text: ``references`` name deferred tools the result loads,
    ``error`` a failure to report.

    Stored as ``[text, tool_reference...]``; providers with native tool search send the
    references, the others the text (which carries the found schemas).
    """

    text: str
    references: list[str] = field(default_factory=list)
    # Set when the result reports a failure the status bar should show although the tool ran
    # (a command that exited non-zero); the result itself is not marked as an error.
    error: str = ""
    # What the policy undid once the tool ran (a file a command may not create): each one a
    # refusal, recorded for the report as a refused call is.
    refused: list[str] = field(default_factory=list)

    def content(self, text: str) -> str | list[Block]:
        if not self.references:
            return text
        return [text_block(text), *(tool_reference(n) for n in self.references)]


@dataclass
class Request:
    """Everything one model call sends. ``system`` and ``tools`` are the frozen prefix."""

    system: str
    tools: list[ToolSpec]
    messages: list[Message]
    max_tokens: int = 4096
    # Deferred tools (skill sidecars, MCP servers). A provider with native tool search
    # (Anthropic) declares every one of them from the first request with ``defer_loading`` and
    # ``tool_search`` results load them by ``tool_reference``; the others never send them: the
    # found schema arrives in the ``tool_search`` result and ``call_tool`` runs the tool, so
    # ``tools`` is the same on every request.
    deferred_tools: list[ToolSpec] = field(default_factory=list)
    # A stable id of the conversation (the same for a session, its sub-agents and its summary
    # calls), for providers that route their prompt cache by one (OpenAI's prompt_cache_key).
    # Not part of the prompt.
    cache_key: str = ""
    # Called with what the failed attempts so far were billed before the provider tries again;
    # it raises to stop (a cost limit the next attempt could cross). Not part of the prompt.
    before_retry: Callable[[Usage], None] | None = field(default=None, compare=False, repr=False)
    # The workspace's folder, for a provider that constrains path arguments to what exists (the
    # embedded model). Not part of the prompt.
    root: str = field(default="", compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "tools": [t.to_dict() for t in self.tools],
            "deferred_tools": [t.to_dict() for t in self.deferred_tools],
            "messages": self.messages,
            "max_tokens": self.max_tokens,
        }


@dataclass
class Usage:
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.output_tokens + other.output_tokens,
        )

    @property
    def total_input(self) -> int:
        """All prompt tokens, cached or not (Anthropic reports the three separately)."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


StopReason = Literal[
    "end_turn", "max_steps", "max_time", "max_cost", "repeated_failure", "cancelled", "refusal",
    "max_tokens", "error",
]  # fmt: skip


@dataclass
class ModelReply:
    """One finished assistant message plus what the provider reported about it."""

    message: Message
    usage: Usage
    stop_reason: str = "end_turn"  # end_turn | tool_use | max_tokens | error
    model: str = ""
    stop_detail: str = (
        ""  # the provider's words on why it stopped (Anthropic's refusal explanation)
    )
    # What attempts that failed before this reply had already reported (billed, but not part of
    # this reply's context): counted in the spend, never in the context window's use.
    discarded: Usage = field(default_factory=Usage)


# ---- streaming from a provider -------------------------------------------------------------


@dataclass
class TextDelta:
    text: str


@dataclass
class ThinkingDelta:
    """Reasoning the model streamed apart from its answer: shown as thinking, never stored
    or sent back as the assistant's text."""

    text: str


@dataclass
class ToolCallDelta:
    """A tool call began streaming (arguments arrive in the final reply)."""

    id: str
    name: str


StreamItem = TextDelta | ThinkingDelta | ToolCallDelta | ModelReply
