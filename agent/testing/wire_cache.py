"""How the wire server counts cached tokens: Anthropic's prompt cache as the API runs it, OpenAI's
as the longest prefix shared with any earlier request; both per model, as a cache is.

Anthropic reads a cache entry only where one was written: at a ``cache_control`` breakpoint of an
earlier request for the same model, found from a breakpoint of this request or from one of the
``LOOKBACK`` block boundaries before it. A request that shares a long prefix with an earlier one
but places its breakpoints so that none reaches back to an entry reads nothing, as on the real
API; counting the longest shared prefix instead would report hits the provider never gives.
The prefix is the prompt text ``wire_requests.prompt_text`` builds (tools, system, messages),
cut at block boundaries: each tool definition, system block and message content block is one.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from agent.providers.scripted import common_prefix_len
from agent.testing.wire_requests import expand_references, prompt_text, strip_cache_control
from agent.types import canonical_json

LOOKBACK = 20  # block boundaries before a breakpoint the API checks for an earlier entry


def _pieces(body: dict[str, Any]) -> list[tuple[str, bool | None]]:
    """The prompt text in pieces, each a block (with whether it carries a breakpoint) or the
    punctuation between blocks (``None``). Joined, they are ``prompt_text("anthropic", body)``."""
    tools = [
        t for t in body.get("tools") or [] if not (isinstance(t, dict) and t.get("defer_loading"))
    ]
    deferred = {t.get("name"): t for t in body.get("tools") or []
                if isinstance(t, dict) and t.get("defer_loading")}  # fmt: skip
    pieces: list[tuple[str, bool | None]] = []

    def block(text: str, raw: Any) -> None:
        pieces.append((text, isinstance(raw, dict) and "cache_control" in raw))

    def listed(items: list[Any]) -> None:
        pieces.append(("[", None))
        for i, item in enumerate(items):
            pieces.append(("," if i else "", None))
            block(canonical_json(strip_cache_control(item)), item)
        pieces.append(("]", None))

    listed(tools)
    system = body.get("system") or ""
    if isinstance(system, list):
        listed(system)
    else:
        block(canonical_json(system), None)
    messages = expand_references(body.get("messages") or [], deferred)
    pieces.append(("[", None))
    for i, message in enumerate(messages):
        pieces.append(("," if i else "", None))
        clean = strip_cache_control(message)
        content = clean.get("content") if isinstance(clean, dict) else None
        if not isinstance(content, list) or not content or set(clean) - {"content", "role"}:
            block(canonical_json(clean), None)
            continue
        pieces.append(('{"content":[', None))
        for k, item in enumerate(content):
            pieces.append(("," if k else "", None))
            block(canonical_json(item), message["content"][k])
        role = ',"role":' + canonical_json(clean["role"]) if "role" in clean else ""
        pieces.append(("]" + role + "}", None))
    pieces.append(("]", None))
    return pieces


class PromptCache:
    """What earlier requests left in the cache; ``read`` gives one request's cached share."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: dict[str, set[str]] = {}  # model -> hashes of prefixes written
        self.texts: dict[str, list[str]] = {}  # api and model -> earlier prompts (OpenAI's)

    def usage(self, api: str, body: dict[str, Any]) -> tuple[int, int, int]:
        """(uncached input, cache read, cache write) in characters of the prompt text."""
        text = prompt_text(api, body)
        if api != "anthropic":
            with self.lock:
                history = self.texts.setdefault(f"{api} {body.get('model', '')}", [])
                read = max((common_prefix_len(text, old) for old in history), default=0)
                history.append(text)
            return len(text) - read, read, 0
        pieces = _pieces(body)
        if "".join(p for p, _ in pieces) != text:  # a shape this model does not cut: no cache
            return len(text), 0, 0
        ends, hashes, marks, digest, offset = [], [], [], hashlib.sha256(), 0
        for piece, marked in pieces:  # the prefix ending at each block: its length and hash
            digest.update(piece.encode())
            offset += len(piece)
            if marked is not None:
                ends.append(offset)
                hashes.append(digest.copy().hexdigest())
                marks.append(marked)
        breakpoints = [i for i, marked in enumerate(marks) if marked]
        if body.get("cache_control") and marks:  # automatic caching: the last block
            breakpoints.append(len(marks) - 1)
        if not breakpoints:
            return len(text), 0, 0
        model = str(body.get("model", ""))
        with self.lock:
            written = self.entries.setdefault(model, set())
            read = 0
            for point in breakpoints:
                for i in range(point, max(-1, point - LOOKBACK - 1), -1):
                    if hashes[i] in written:
                        read = max(read, ends[i])
                        break
            written.update(hashes[i] for i in breakpoints)
        last = ends[max(breakpoints)]
        return len(text) - last, read, last - read
