"""Anthropic Messages API provider, with prompt-cache breakpoints that match the harness's
frozen-prefix design.

Breakpoints: one on the system block (caching tools + system, the frozen prefix) and one on
the last content block of the latest message (the moving tail, so each turn reads everything
before it from the cache). The API looks back at most ``LOOKBACK_BLOCKS`` blocks from a
breakpoint for an earlier cache entry, so when one step adds more blocks than that (a dozen
parallel tool calls and their results) a third breakpoint marks the previous request's last
block, where the previous request wrote its entry. Never more than ``MAX_BREAKPOINTS``.

Tool search is native: every deferred tool is declared from the first request with
``defer_loading: true`` (after the built-ins, so their bytes and order never change), and a
``tool_search`` result loads the found ones with ``tool_reference`` blocks.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from agent.errors import ProviderError, ServerError
from agent.providers.arguments import parse_arguments, stored_form
from agent.providers.retry import RetryPolicy, provider_error
from agent.providers.sdk_client import SdkClientModel
from agent.types import (
    RAW_INPUT,
    Block,
    Message,
    ModelReply,
    Request,
    StreamItem,
    TextDelta,
    ToolCallDelta,
    Usage,
)

# claude-sonnet-4-5 reaches end-of-life on 2026-11-30 (the SDK warns), so the default moved on.
DEFAULT_MODEL = "claude-sonnet-4-6"
EPHEMERAL = {"type": "ephemeral"}
LOOKBACK_BLOCKS = 20  # how far back from a breakpoint the API looks for an earlier entry
MAX_BREAKPOINTS = 4


def build_params(request: Request, model: str) -> dict[str, Any]:
    """The JSON body (minus ``stream``) for one call; pure, so prefix stability is testable."""
    tools: list[dict[str, Any]] = [t.to_dict() for t in request.tools]
    tools += [{**t.to_dict(), "defer_loading": True} for t in request.deferred_tools]
    deferred = {t.name for t in request.deferred_tools}
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "system": [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}],
        "messages": with_breakpoints(
            wire_messages(
                without_empty(without_raw_input(stored_form(request.messages))), deferred
            ),
            budget=3,
        ),
    }
    if tools:
        params["tools"] = tools
    return params


def without_raw_input(messages: list[Message]) -> list[Message]:
    """Tool calls without the OpenAI-format argument text a reply may have kept (a session
    begun on another provider): the Messages API takes ``input`` only and rejects extra keys."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(RAW_INPUT in b for b in content):
            content = [{k: v for k, v in b.items() if k != RAW_INPUT} for b in content]
            message = {**message, "content": content}
        out.append(message)
    return out


def without_empty(messages: list[Message]) -> list[Message]:
    """Without the empty replies the model sometimes ends a turn with: the API takes an empty
    message only as the final assistant one (a reply to continue), and refused every later
    request that held one. The same messages always go out the same, so the prefix holds."""
    last = len(messages) - 1
    return [
        m
        for i, m in enumerate(messages)
        if _as_blocks(m) or (i == last and m.get("role") == "assistant")
    ]


def wire_messages(messages: list[Message], deferred: set[str]) -> list[Message]:
    """Tool results that load deferred tools are sent as their ``tool_reference`` blocks only
    (the text beside them is for providers without native tool search). A reference to a tool
    the request does not declare would be rejected; such a result falls back to its text."""
    out = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list) or message.get("role") != "user":
            out.append(message)
            continue
        if any(_references(b) for b in content):
            message = {**message, "content": [_load_block(b, deferred) for b in content]}
        out.append(message)
    return out


def _references(block: Block) -> list[Block]:
    content = block.get("content") if block.get("type") == "tool_result" else None
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_reference"]


def _load_block(block: Block, deferred: set[str]) -> Block:
    refs = _references(block)
    if not refs:
        return block
    known = [r for r in refs if r.get("tool_name") in deferred]
    if known:
        return {**block, "content": known}
    text = "\n".join(str(b.get("text", "")) for b in block["content"] if b.get("type") == "text")
    return {**block, "content": text}


def _as_blocks(message: Message) -> list[Block]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content or [])


def with_breakpoints(messages: list[Message], budget: int = 3) -> list[Message]:
    """A copy of ``messages`` with ``cache_control`` on the last block and, when the latest
    step added more than ``LOOKBACK_BLOCKS`` blocks, on the previous request's last block.

    The previous request ended where the latest assistant reply began. Only the messages touched
    are copied; the stored transcript is never modified. ``budget`` is how many breakpoints the messages may use.
    """
    if not messages or budget <= 0:
        return list(messages)
    out = list(messages)
    marks = [len(out) - 1]
    # The latest assistant reply answered the previous request, so that request ended just
    # before it, however many messages came after it (results of calls a cancel cut short,
    # then the next prompt; the text a broken stream left, then the next prompt).
    reply = max((i for i, m in enumerate(out) if m.get("role") == "assistant"), default=0)
    if reply >= 1 and budget >= 2:
        added = sum(len(_as_blocks(m)) for m in out[reply:])
        if added > LOOKBACK_BLOCKS and _as_blocks(out[reply - 1]):
            marks.append(reply - 1)
    for index in marks:
        content = _as_blocks(out[index])
        if content:
            content[-1] = {**content[-1], "cache_control": EPHEMERAL}
            out[index] = {**out[index], "content": content}
    return out


class AnthropicModel(SdkClientModel):
    name = "anthropic"
    native_tool_search = True  # deferred tools declared up front, loaded by tool_reference
    key_var = "ANTHROPIC_API_KEY"
    base_var = "ANTHROPIC_BASE_URL"

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        context_window: int = 200_000,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
    ) -> None:
        self._init_endpoint(
            model=model,
            api_key=api_key,
            base_url=base_url,
            retry=retry,
            timeout=timeout,
            default_model=DEFAULT_MODEL,
            no_key_hint="export ANTHROPIC_API_KEY=... (or ANTHROPIC_BASE_URL for a compatible server)",
        )
        self.context_window = context_window

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> AnthropicModel:
        return cls(
            model=config.get("model"),
            api_key=config.get("api_key"),
            base_url=config.get("base_url"),
        )

    def _new_client(self) -> Any:
        from kiln_errors.settled_imports import settled_imports

        with settled_imports("anthropic"):  # ~2 s of CPU with the collector running
            import anthropic

            client = anthropic.AsyncAnthropic(
                api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout
            )
            _ = client.messages  # what the client imports on first use, imported here
        return client

    def wire_body(self, request: Request) -> dict[str, Any]:
        """The JSON body this request goes out as (for the session's wire log)."""
        return build_params(request, self.model)

    async def _once(self, request: Request) -> AsyncGenerator[StreamItem, None]:
        params = build_params(request, self.model)
        state = _Accumulator(self.model)
        client = self._sdk_client()
        try:
            async for item in self._relay(
                lambda: client.messages.create(**params, stream=True), state.feed
            ):
                yield item
            if not state.finished:  # no stop reason, or a block left open: the reply may be cut
                raise provider_error(
                    ServerError, "anthropic: the stream ended before message_stop", hint="retry"
                )
        except ProviderError as exc:
            exc.usage = state.usage  # type: ignore[attr-defined]  # billed before it failed
            raise
        yield state.reply()


class _Accumulator:
    """Folds raw stream events into deltas for the caller and one final neutral message."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.blocks: dict[int, Block] = {}
        self.json_parts: dict[int, list[str]] = {}
        self.usage = Usage()
        self.stop_reason = "end_turn"
        self.stop_detail = ""
        self.stopped = False  # message_delta said why it stopped
        self.open: set[int] = set()  # content blocks started and not yet stopped
        self.ended = False  # message_stop came

    @property
    def finished(self) -> bool:
        """``message_stop`` came, or the stop reason with every block closed: a proxy that drops
        the last event has still delivered the whole reply."""
        return self.ended or (self.stopped and not self.open)

    def feed(self, event: Any) -> list[StreamItem]:
        kind = event.type
        if kind == "content_block_start":
            self.open.add(event.index)
        elif kind == "content_block_stop":
            self.open.discard(event.index)
        if kind == "message_start":
            self.model = event.message.model or self.model
            self._take_usage(event.message.usage)
        elif kind == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                self.blocks[event.index] = {
                    "type": "tool_use",
                    "id": block.id,
                    "name": block.name,
                    # Anthropic streams the input as deltas after an empty ``{}``; some proxies
                    # (Bedrock or Vertex behind LiteLLM) put it whole here and send none.
                    "input": block.input if isinstance(block.input, dict) else {},
                }
                self.json_parts[event.index] = []
                return [ToolCallDelta(block.id, block.name)]
            if block.type == "text":
                self.blocks[event.index] = {"type": "text", "text": block.text or ""}
                return [TextDelta(block.text)] if block.text else []
            self.blocks[event.index] = block.model_dump(exclude_none=True)
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                self.blocks[event.index]["text"] += delta.text
                return [TextDelta(delta.text)]
            if delta.type == "input_json_delta":
                self.json_parts[event.index].append(delta.partial_json)
            elif delta.type == "thinking_delta":
                block = self.blocks[event.index]
                block["thinking"] = block.get("thinking", "") + delta.thinking
            elif delta.type == "signature_delta":
                self.blocks[event.index]["signature"] = delta.signature
        elif kind == "content_block_stop":
            if event.index in self.json_parts:
                raw = "".join(self.json_parts.pop(event.index))
                if raw.strip():
                    self.blocks[event.index]["input"] = parse_arguments(raw)
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self.stopped = self.stopped or bool(event.delta.stop_reason)
            details = getattr(event.delta, "stop_details", None)
            explanation = getattr(details, "explanation", None)
            if isinstance(details, dict):  # an SDK that does not know the field yet
                explanation = details.get("explanation")
            self.stop_detail = str(explanation or "")
            self._take_usage(event.usage)
        elif kind == "message_stop":
            self.ended = True
        return []

    def _take_usage(self, usage: Any) -> None:
        """message_start carries the prompt counts, message_delta the final output count.

        Later events may repeat the prompt counts (cumulative) or, from some proxies, send
        zeros; a count therefore only ever grows.
        """
        if usage is None:
            return
        for ours, theirs in (
            ("input_tokens", "input_tokens"),
            ("cache_read_tokens", "cache_read_input_tokens"),
            ("cache_write_tokens", "cache_creation_input_tokens"),
            ("output_tokens", "output_tokens"),
        ):
            value = getattr(usage, theirs, None)
            if value is not None:
                setattr(self.usage, ours, max(getattr(self.usage, ours), int(value)))

    def reply(self) -> ModelReply:
        content = [
            b
            for _, b in sorted(self.blocks.items())
            if not (b.get("type") == "text" and not b["text"])
        ]
        message: Message = {"role": "assistant", "content": content}
        return ModelReply(message=message, usage=self.usage, stop_reason=self.stop_reason,
                          model=self.model, stop_detail=self.stop_detail)  # fmt: skip
