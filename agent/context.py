"""The context assembler: the frozen prefix (system prompt + built-in tool specs) and the tail.

Dynamic context (environment, memory, skills catalog, status bar) is queued here and appended
as tagged text blocks to the next user message at the moment it is created, so nothing already
sent is rewritten. Extensions (compaction, the taint tracker, skills) are registered here and
called in order before each request and as each tail is built.
"""

from __future__ import annotations

import hashlib
import platform
import time
from pathlib import Path
from typing import Any

from agent.prompts import SYSTEM_PROMPT
from agent.protocols import Extension, SessionView, ToolSpecs
from agent.status import StatusBar, one_line
from agent.types import Block, Message, Request

# state: notes for the model's next request that must outlive the process (``Session.landed_late``)
NOTES_KEPT = "notes_kept"


class ContextAssembler:
    def __init__(self, tools: ToolSpecs, status: StatusBar, extensions: list[Extension]) -> None:
        self.tools = tools
        self.status = status
        self.extensions = extensions
        self.pending: list[str] = []  # tail blocks waiting for the next user message

    def prefix(self) -> dict[str, Any]:
        """The part of every request that never changes within a session."""
        return {"system": SYSTEM_PROMPT, "tools": [s.to_dict() for s in self.tools.specs()]}

    def request(
        self, messages: list[Message], max_tokens: int, cache_key: str = "", root: str = ""
    ) -> Request:
        return Request(
            system=SYSTEM_PROMPT,
            tools=self.tools.specs(),
            messages=messages,
            max_tokens=max_tokens,
            deferred_tools=self.tools.deferred_specs(),
            cache_key=cache_key,
            root=root,
        )

    def add(self, *blocks: str) -> None:
        """Queue text for the tail of the next user message."""
        self.pending.extend(blocks)

    def tail(self, session: SessionView, *, with_status: bool) -> list[Block]:
        """The queued blocks, the extensions' blocks and (when it changed) the status bar."""
        for ext in self.extensions:
            block = ext.tail_block(session)
            if block:
                self.pending.append(block)
        # No status before the first request: the first block sent is then the complete one.
        status = self.status.changed_block() if with_status else None
        kept = session.state.pop(NOTES_KEPT, [])
        blocks = [*kept, *self.pending, *([status] if status else [])]
        self.pending = []
        return [{"type": "text", "text": b} for b in blocks]

    async def before_request(self, session: SessionView) -> None:
        for ext in self.extensions:
            await ext.before_request(session)

    async def aclose(self) -> None:
        for ext in self.extensions:
            try:
                await ext.aclose()
            except Exception:  # noqa: BLE001 - closing must not mask the turn's outcome
                pass


def cache_key(session_id: str) -> str:
    """The conversation's cache routing key (OpenAI's ``prompt_cache_key``), hashed so no
    local detail (the session id holds the time it began) leaves the machine."""
    return "kiln-" + hashlib.sha256(session_id.encode()).hexdigest()[:24]


def mode_block(mode: str) -> str:
    """The permission mode, changed since the environment block stated it (appended at the tail:
    that block stays as it was sent)."""
    return (
        f"<environment>\npermission_mode: {mode} (changed during the session; it replaces the "
        "mode stated earlier)\n</environment>"
    )


def environment_block(root: Path, mode: str, user_cwd: str = "") -> str:
    """Facts about the machine for the first user message (never the prefix: the date changes).

    ``user_cwd`` is where the user ran kiln, relative to the workspace root, when it differs.
    Both are paths a repository names (a folder ``a\\n<`` holding ``environment>``): each stays
    on its line (``agent.status.one_line``)."""
    cwd = one_line(user_cwd, 4096)
    where = (
        f"user_cwd: {cwd} (where the user ran kiln, relative to workspace_root)\n" if cwd else ""
    )
    return (
        "<environment>\n"
        f"workspace_root: {one_line(str(root), 4096)}\n"
        f"os: {platform.system()} {platform.release()} {platform.machine()}\n"
        f"python: {platform.python_version()}\npermission_mode: {mode}\n"
        f"date: {time.strftime('%Y-%m-%d')}\n{where}</environment>"
    )
