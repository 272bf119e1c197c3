"""Tool-call arguments as providers hand them to the harness.

Models send arguments as JSON text (streamed in pieces by some APIs). Every provider turns
them into the ``input`` dict of a ``tool_use`` block here, the same way: text that is not a
JSON object is kept raw under ``INVALID_JSON`` so the tool runner can tell the model what was
wrong instead of dropping the call. On the way back out, ``stored_form`` gives the messages the
one key order they have on disk.
"""

from __future__ import annotations

import json
from typing import Any

from agent.types import INVALID_JSON, Message, canonical_json
from skills_registry import json_limits


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool arguments as a dict; invalid JSON is kept raw so the loop can tell the model."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError, RecursionError):  # a few thousand [[[ crashed the run
        return {INVALID_JSON: str(raw)}
    if not isinstance(value, dict) or json_limits.depth(value) > json_limits.MAX_DEPTH:
        return {INVALID_JSON: str(raw)}  # nested just under the parser's limit: the next walk
    return value


def stored_form(messages: list[Message]) -> list[Message]:
    """The messages as the session store keeps them (``canonical_json``: keys sorted), so a
    request is the same bytes whether its transcript is still in memory or was resumed from
    disk; otherwise a resumed session re-sends every tool call's arguments in another key
    order and the provider's prompt cache misses from the first one."""
    return json.loads(canonical_json(messages))  # type: ignore[no-any-return]
