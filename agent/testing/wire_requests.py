"""How the wire server reads a request the way the real APIs do: the prompt text a prompt cache
compares (tools, system, messages; ``cache_control`` markers ignored; deferred Anthropic tools
counted where a ``tool_reference`` loads them), and what the Anthropic API rejects about deferred
tools and cache breakpoints."""

from __future__ import annotations

from typing import Any

from agent.types import canonical_json


def strip_cache_control(value: Any) -> Any:
    """The request without ``cache_control`` markers: a moving breakpoint is not content."""
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def prompt_text(api: str, body: dict[str, Any]) -> str:
    """The request in the order the model reads it (tools, system, messages), as canonical JSON.

    Anthropic tools sent with ``defer_loading`` are left out: the API expands them where a
    ``tool_reference`` names them (counted there) instead of in the prefix, which is what keeps
    the cache warm.
    """
    tools = body.get("tools") or []
    messages = body.get("messages") or []
    if api == "anthropic":
        deferred = {
            t.get("name"): t for t in tools if isinstance(t, dict) and t.get("defer_loading")
        }
        tools = [t for t in tools if not (isinstance(t, dict) and t.get("defer_loading"))]
        messages = expand_references(messages, deferred)
    parts = [tools, body.get("system") or "", messages]
    return "".join(canonical_json(strip_cache_control(p)) for p in parts)


def expand_references(value: Any, deferred: dict[Any, dict[str, Any]]) -> Any:
    """A ``tool_reference`` counts as the definition it loads, where it stands (as the API
    expands it), so usage includes the loaded schema."""
    if isinstance(value, list):
        return [expand_references(v, deferred) for v in value]
    if isinstance(value, dict):
        if value.get("type") == "tool_reference" and value.get("tool_name") in deferred:
            tool = {k: v for k, v in deferred[value["tool_name"]].items() if k != "defer_loading"}
            return {"type": "tool_definition", "tool": tool}
        return {k: expand_references(v, deferred) for k, v in value.items()}
    return value


def anthropic_tool_problem(body: dict[str, Any]) -> str:
    """What the real API rejects about deferred tools and breakpoints: a ``tool_reference``
    to a tool not declared with ``defer_loading``, every tool deferred, more than four
    ``cache_control`` breakpoints. Empty when the request is fine."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    deferred = {t.get("name") for t in tools if t.get("defer_loading")}
    if tools and len(deferred) == len(tools):
        return "at least one tool must not have defer_loading set"
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            inner = block.get("content") if isinstance(block, dict) else None
            for ref in inner if isinstance(inner, list) else []:
                is_ref = isinstance(ref, dict) and ref.get("type") == "tool_reference"
                if is_ref and ref.get("tool_name") not in deferred:
                    return (
                        f"tool_reference to {ref.get('tool_name')!r}, which is not a tool "
                        "declared with defer_loading in this request"
                    )
    if _count_cache_control(body) > 4:
        return "a maximum of 4 blocks with cache_control may be provided"
    return ""


def _count_cache_control(value: Any) -> int:
    if isinstance(value, dict):
        own = 1 if "cache_control" in value else 0
        return own + sum(_count_cache_control(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count_cache_control(v) for v in value)
    return 0


def has_cache_control(value: Any) -> bool:
    if isinstance(value, dict):
        return "cache_control" in value or any(has_cache_control(v) for v in value.values())
    if isinstance(value, list):
        return any(has_cache_control(v) for v in value)
    return False


def tool_pairing_problem(api: str, body: dict[str, Any]) -> str:
    """What both real APIs reject about tool calls and their results: a call not answered in
    the message right after it, or a result for no call of the message right before it (the
    same 400 each API gives). Empty when every call and result pair up."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    if api == "anthropic":
        return _anthropic_pairing(messages)
    return _openai_pairing(messages)


def _blocks(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    content = message.get("content")
    return (
        [b for b in content if isinstance(b, dict) and b.get("type") == kind]
        if isinstance(content, list)
        else []
    )


def _anthropic_pairing(messages: list[dict[str, Any]]) -> str:
    calls: set[str] = set()  # the ids the previous assistant message asked for
    for message in messages:
        if message.get("role") == "assistant":
            if calls:
                return f"tool_use ids were found without tool_result blocks immediately after: {sorted(calls)}"
            calls = {str(b.get("id")) for b in _blocks(message, "tool_use")}
            continue
        results = {str(b.get("tool_use_id")) for b in _blocks(message, "tool_result")}
        if results - calls:
            return f"unexpected tool_use_id found in tool_result blocks: {sorted(results - calls)}"
        if calls - results:
            return f"tool_use ids were found without tool_result blocks immediately after: {sorted(calls - results)}"
        calls = set()
    return ""


def _openai_pairing(messages: list[dict[str, Any]]) -> str:
    calls: set[str] = set()  # asked for by the last assistant message, not yet answered
    for message in messages:
        role = message.get("role")
        if role == "tool":
            call_id = str(message.get("tool_call_id"))
            if call_id not in calls:
                return (
                    "messages with role 'tool' must be a response to a preceding message with "
                    f"'tool_calls' ({call_id})"
                )
            calls.discard(call_id)
            continue
        if calls:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'; without a response: {sorted(calls)}"
            )
        if role == "assistant":
            calls = {
                str(c.get("id")) for c in message.get("tool_calls") or [] if isinstance(c, dict)
            }
    return ""


def empty_message_problem(api: str, body: dict[str, Any]) -> str:
    """What both real APIs reject about empty messages: Anthropic any message without content
    but a final assistant one; OpenAI an assistant message with neither content nor tool
    calls. Empty when none is."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    for i, message in enumerate(messages):
        content = message.get("content")
        if content not in ("", [], None) or (api == "openai" and content is not None):
            continue
        if api == "anthropic" and not (
            i == len(messages) - 1 and message.get("role") == "assistant"
        ):
            return (
                f"messages.{i}: all messages must have non-empty content except for the "
                "optional final assistant message"
            )
        if api == "openai" and message.get("role") == "assistant" and not message.get("tool_calls"):
            return f"Invalid value for 'messages[{i}].content': expected a string, got null."
    return ""
