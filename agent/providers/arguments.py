"""Tool-call arguments as providers hand them to the harness.

Models send arguments as JSON text (streamed in pieces by some APIs). Every provider turns
them into the ``input`` dict of a ``tool_use`` block here, the same way: text that is not a
JSON object is kept raw under ``INVALID_JSON`` so the tool runner can tell the model what was
wrong instead of dropping the call.
"""

from __future__ import annotations

import json
from typing import Any

from agent.types import INVALID_JSON


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool arguments as a dict; invalid JSON is kept raw so the loop can tell the model."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        return {INVALID_JSON: str(raw)}
    return value if isinstance(value, dict) else {INVALID_JSON: str(raw)}
