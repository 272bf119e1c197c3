"""JSON from a third party, parsed without letting its shape crash the reader.

``json.loads`` raises ``RecursionError`` (not ``ValueError``) on an array nested a few thousand
levels deep, which a 64 KB request body or a tool schema in a skill archive can hold; and a
document nested just under that limit passes the parser only to overflow the first recursive
walk over it (wrapping a schema's descriptions, serialising it for a provider). ``loads`` turns
both into ``ValueError``, so every caller's existing refusal path handles them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 64  # far beyond any real tool schema or API body


def loads(
    text: str | bytes,
    *,
    max_depth: int = MAX_DEPTH,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    nul: bool = True,
) -> Any:
    """``json.loads`` that raises ``ValueError`` for nesting deeper than ``max_depth``, for a
    lone surrogate, and (``nul=False``, for what a database stores) for a NUL character."""
    try:
        value = json.loads(text, object_pairs_hook=object_pairs_hook)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {max_depth} levels") from None
    if depth(value) > max_depth:
        raise ValueError(f"JSON nested deeper than {max_depth} levels")
    if (bad := unstorable_text(value, nul=nul)) is not None:
        raise ValueError(f"JSON text {bad!r} holds a lone surrogate or NUL, which is not allowed")
    return value


def lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) in ``value`` with a lone surrogate such as ``\\ud800``,
    which JSON escapes can spell but UTF-8 cannot encode: canonical JSON, a signature over it,
    a terminal or a log would fail on it later. None when every string is Unicode text."""
    return unstorable_text(value, nul=True)


def unstorable_text(value: Any, *, nul: bool = False) -> str | None:
    """The first string in ``value`` with a lone surrogate, or (unless ``nul``) a NUL, which
    PostgreSQL text and jsonb refuse; None when there is none."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if (not nul and "\x00" in item) or (
                not item.isascii() and any("\ud800" <= ch <= "\udfff" for ch in item)
            ):
                return item[:40]
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def depth(value: Any) -> int:
    """How deeply ``value``'s arrays and objects nest (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest
