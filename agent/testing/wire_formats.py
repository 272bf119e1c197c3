"""Response bodies in the two real wire formats, built from one scripted reply.

Kept apart from the HTTP plumbing so the event sequences can be read against the providers'
documentation: Anthropic Messages (``message_start`` … ``message_stop``) and OpenAI Chat
Completions chunks (``delta.content``, ``delta.tool_calls[index]``, a usage chunk, ``[DONE]``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agent.providers.arguments import parse_arguments
from agent.types import canonical_json


@dataclass
class WireReply:
    text: str = ""
    # {"id", "name", "raw"}: raw is the argument JSON text exactly as it will be streamed.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    die: bool = False  # break the stream off after the text (no closing events)
    stream_error: str | None = None  # an SSE ``error`` event of this type after the text, if any
    stop_details: dict[str, Any] | None = None  # Anthropic's, beside a ``refusal`` stop reason
    refusal: str = ""  # OpenAI's: streamed in ``delta.refusal`` instead of ``content``


@dataclass
class WireUsage:
    input_tokens: int
    cache_read: int
    cache_write: int
    output_tokens: int


def output_tokens(reply: WireReply) -> int:
    """What a reply's output is counted as: its content's canonical JSON characters / 4."""
    content: list[Any] = [reply.text] + [[c["name"], c["raw"]] for c in reply.tool_calls]
    return max(1, len(canonical_json(content)) // 4)


def requested_limit(body: dict[str, Any]) -> int:
    """The request's output limit (``max_tokens``; OpenAI's reasoning models take
    ``max_completion_tokens``), 0 when it set none."""
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return 0


def cut_to(reply: WireReply, limit: int) -> WireReply:
    """The reply a real API sends when it would write more than ``limit`` tokens: generation
    stops there (the text cut, or a tool call's arguments cut in the middle, the calls after it
    not reached), and the stop reason says so."""
    if not limit or output_tokens(reply) <= limit:
        return reply
    left = limit * 4 - 4
    text = reply.text[:left]
    left -= len(text) + 8
    calls = []
    for call in reply.tool_calls:
        room = left - len(call["name"]) - 8
        if room <= 0:
            break
        calls.append({**call, "raw": call["raw"][:room]})
        left = room - len(call["raw"])
    return WireReply(text=text, tool_calls=calls, stop_reason="max_tokens", die=reply.die,
                     stream_error=reply.stream_error)  # fmt: skip


def _pieces(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ---- Anthropic Messages --------------------------------------------------------------------


def anthropic_stop(reply: WireReply) -> str:
    return reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")


def anthropic_usage(usage: WireUsage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation_input_tokens": usage.cache_write,
        "output_tokens": usage.output_tokens,
    }


def anthropic_json(
    reply: WireReply, usage: WireUsage, *, model: str, msg_id: str
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call in reply.tool_calls:
        content.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": call["name"],
                "input": parse_arguments(call["raw"]),
            }
        )
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": anthropic_stop(reply),
        "stop_sequence": None,
        **({"stop_details": reply.stop_details} if reply.stop_details else {}),
        "usage": anthropic_usage(usage),
    }


def anthropic_sse(reply: WireReply, usage: WireUsage, *, model: str, msg_id: str) -> list[bytes]:
    """One ``event:/data:`` frame per list item, in the order the real API sends them."""
    frames: list[bytes] = []

    def emit(event: str, data: dict[str, Any]) -> None:
        frames.append(f"event: {event}\ndata: {_dump({'type': event, **data})}\n\n".encode())

    start_usage = {**anthropic_usage(usage), "output_tokens": 1}
    message: dict[str, Any] = {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": start_usage}  # fmt: skip
    emit("message_start", {"message": message})
    index = 0
    if reply.text:
        emit("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
        for piece in _pieces(reply.text):
            emit(
                "content_block_delta",
                {"index": index, "delta": {"type": "text_delta", "text": piece}},
            )
        if reply.die:
            return frames
    if reply.stream_error:  # after the text, if any: the middle of a reply
        emit(
            "error",
            {"error": {"type": reply.stream_error, "message": f"scripted {reply.stream_error}"}},
        )
        return frames
    if reply.text:
        emit("content_block_stop", {"index": index})
        index += 1
    if reply.die:
        return frames
    for call in reply.tool_calls:
        block = {"type": "tool_use", "id": call["id"], "name": call["name"], "input": {}}
        emit("content_block_start", {"index": index, "content_block": block})
        for piece in _pieces(call["raw"], 12):
            emit(
                "content_block_delta",
                {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
            )
        emit("content_block_stop", {"index": index})
        index += 1
    delta: dict[str, Any] = {"stop_reason": anthropic_stop(reply), "stop_sequence": None}
    if reply.stop_details:
        delta["stop_details"] = reply.stop_details
    emit("message_delta", {"delta": delta, "usage": {"output_tokens": usage.output_tokens}})
    emit("message_stop", {})
    return frames


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
            429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")  # fmt: skip
    return {"type": "error", "error": {"type": kind, "message": message}}


# ---- OpenAI Chat Completions ---------------------------------------------------------------


def openai_finish(reply: WireReply) -> str:
    mapping = {"tool_use": "tool_calls", "end_turn": "stop", "max_tokens": "length"}
    if reply.stop_reason:
        return mapping.get(reply.stop_reason, reply.stop_reason)
    return "tool_calls" if reply.tool_calls else "stop"


def openai_usage(usage: WireUsage) -> dict[str, Any]:
    prompt = usage.input_tokens + usage.cache_read + usage.cache_write
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read},
    }


def openai_json(reply: WireReply, usage: WireUsage, *, model: str, msg_id: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None,
                               "refusal": reply.refusal or None}  # fmt: skip
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["raw"]},
            }
            for c in reply.tool_calls
        ]
    return {
        "id": msg_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": openai_finish(reply)}],
        "usage": openai_usage(usage),
    }


def openai_sse(
    reply: WireReply, usage: WireUsage | None, *, model: str, msg_id: str
) -> list[bytes]:
    """Chunks as the API streams them; tool-call argument pieces of parallel calls interleave."""
    frames: list[bytes] = []

    def emit(
        delta: dict[str, Any] | None, finish: str | None = None, use: dict[str, Any] | None = None
    ) -> None:
        chunk: dict[str, Any] = {
            "id": msg_id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
        }
        chunk["choices"] = (
            [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        )
        if use is not None:
            chunk["usage"] = use
        frames.append(f"data: {_dump(chunk)}\n\n".encode())

    emit({"role": "assistant", "content": ""})
    for piece in _pieces(reply.text):
        emit({"content": piece})
    for piece in _pieces(reply.refusal):
        emit({"content": None, "refusal": piece})
    if reply.die:
        return frames
    for i, call in enumerate(reply.tool_calls):
        head = {
            "index": i,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        emit({"tool_calls": [head]})
    pieces = [_pieces(c["raw"], 12) for c in reply.tool_calls]
    for step in range(max((len(p) for p in pieces), default=0)):
        for i, parts in enumerate(pieces):
            if step < len(parts):
                emit({"tool_calls": [{"index": i, "function": {"arguments": parts[step]}}]})
    emit({}, openai_finish(reply))
    if usage is not None:
        emit(None, use=openai_usage(usage))
    frames.append(b"data: [DONE]\n\n")
    return frames


def openai_error(status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(
        status, "server_error"
    )
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
