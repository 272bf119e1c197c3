"""The model request that summarises what a compaction removes.

It continues the session's own request: the same system prompt, tools and messages, then one
user message asking for the summary. Everything before that message is what the provider's
prompt cache already holds from the session's last request, so the summary reads the history
at the cached rate instead of paying for it again (and, on Anthropic, instead of writing a cache
entry for a prompt that is never sent again). When that request is too long for the window (the
compaction that follows an overflow), or when what it would send uncached (everything since the
last request) outweighs the removed part, a standalone request carries the removed part as text.
"""

from __future__ import annotations

from agent.compaction_facts import render_message
from agent.protocols import SessionView
from agent.types import Message, Request, canonical_json, user_message

SUMMARY_MARKER = "<compaction_request>"
SUMMARY_SYSTEM = (
    "You summarise part of a coding agent's transcript for the agent itself. Keep every "
    "decision, constraint, finding, file path, identifier, number and error verbatim; drop "
    "chatter. Answer with at most 12 short lines of plain text."
)
ANCHOR_CHARS = 160
CACHED_PRICE = 0.25  # a cached input token against an uncached one, on the dear side


def worth_continuing(messages: list[Message], removed: list[Message]) -> bool:
    """Whether the continuation costs less than a standalone prompt of the removed part: it
    reads what the last request sent from the cache, but sends what came after it (the last
    reply and the results since) uncached, which after a large fan-out of reads can be more
    than the removed part itself."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=0)
    new = len(canonical_json(messages[last:]))
    cached = len(canonical_json(messages[:last]))
    alone = sum(len(render_message(m, i)) for i, m in enumerate(removed))
    return new + CACHED_PRICE * cached < alone


def _earlier(prior: list[str] | None) -> str:
    return ("Earlier summaries:\n" + "\n".join(prior) + "\n\n") if prior else ""


def continuation(
    session: SessionView, removed: list[Message], kept: list[Message], prior: list[str] | None,
    max_tokens: int,
) -> Request:  # fmt: skip
    """The session's next request plus a summary instruction naming the part that goes."""
    base = session.build_request()
    anchor = _anchor(kept[0]) if kept else ""
    until = (
        f'up to (not including) the reply of yours that begins: "{anchor}"'
        if anchor
        else "up to the latest exchange"
    )
    prompt = (
        f"{SUMMARY_MARKER}\n{_earlier(prior)}The oldest part of this conversation is about to "
        f"leave your context: the {len(removed)} messages after my first message, {until}. "
        "Summarise that part for yourself. Keep every decision, constraint, finding, file path, "
        "identifier, number and error verbatim; drop chatter. Answer with at most 12 short "
        "lines of plain text and call no tool."
    )
    return Request(
        system=base.system,
        tools=base.tools,
        messages=[*base.messages, user_message(prompt)],
        max_tokens=max_tokens,
        deferred_tools=base.deferred_tools,
        cache_key=base.cache_key,
    )


def standalone(
    removed: list[Message], prior: list[str] | None, max_tokens: int, cap: int
) -> Request:
    """The removed part as text, on its own (when the continuation does not fit the window)."""
    transcript = "\n".join(render_message(m, i) for i, m in enumerate(removed))[:cap]
    prompt = (
        f"{SUMMARY_MARKER}\n{_earlier(prior)}Summarise this part of the transcript:\n{transcript}"
    )
    return Request(
        system=SUMMARY_SYSTEM, tools=[], messages=[user_message(prompt)], max_tokens=max_tokens
    )


def _anchor(message: Message) -> str:
    """How the first kept message begins, to say where the removed part ends."""
    parts = []
    for block in message.get("content") or []:
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            parts.append(f"{block.get('name')} {canonical_json(block.get('input', {}))}")
    text = " ".join(" ".join(parts).split())
    return text[:ANCHOR_CHARS] + ("…" if len(text) > ANCHOR_CHARS else "")
