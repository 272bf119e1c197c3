"""Streamed text held per session for a few milliseconds and sent as one update.

A model emits a delta every few tokens and an editor re-renders per notification, so both
front-ends merge plain text chunks; whatever else they send for the session flushes the held
text first (``flush``), which keeps the order the agent produced.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from lsp_server.core.updates import COALESCE_SECONDS


class TextCoalescer:
    """Held text per session; ``send(session_id, update)`` receives the merged chunk."""

    def __init__(self, send: Callable[[str, dict[str, Any]], object]) -> None:
        self._send = send
        self._text: dict[str, list[str]] = {}
        self._flush_at: dict[str, asyncio.TimerHandle] = {}

    def hold(self, session_id: str, update: dict[str, Any]) -> None:
        """Keep a text chunk (see ``is_text_chunk``); sent within ``COALESCE_SECONDS``."""
        self._text.setdefault(session_id, []).append(update["content"]["text"])
        if session_id not in self._flush_at:
            self._flush_at[session_id] = asyncio.get_running_loop().call_later(
                COALESCE_SECONDS, self.flush, session_id
            )

    def flush(self, session_id: str) -> None:
        """Send the session's held text now, if any."""
        handle = self._flush_at.pop(session_id, None)
        if handle is not None:
            handle.cancel()
        parts = self._text.pop(session_id, None)
        if parts:
            text = {"type": "text", "text": "".join(parts)}
            self._send(session_id, {"sessionUpdate": "agent_message_chunk", "content": text})
