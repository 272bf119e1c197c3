"""Memory files edited while a session runs reach the model at the tail.

The memory a session started with stays in its first message, byte for byte (the cached prefix
depends on it); a file that changed since it was sent is sent again as a new block appended to
the next message, with a note that it replaces the earlier text.
"""

from __future__ import annotations

from agent.memory import Memory
from agent.protocols import SessionView


class MemoryWatch:
    """A session ``Extension`` over the session's ``Memory``."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def tail_block(self, session: SessionView) -> str | None:
        blocks = self.memory.changed_blocks()
        return "\n\n".join(blocks) if blocks else None

    async def before_request(self, session: SessionView) -> None:
        return None

    async def aclose(self) -> None:
        return None
