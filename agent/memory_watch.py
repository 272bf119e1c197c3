"""Memory files edited while a session runs reach the model at the tail.

The memory a session started with stays in its first message, byte for byte (the cached prefix
depends on it); a file that changed since it was sent, or one of the files it imports
(``@docs/style.md``), is sent again as a new block appended to the next message, with a note that
it replaces the earlier text. An import that was not found is watched too: created later, the
importing file is sent again with it.
"""

from __future__ import annotations

from pathlib import Path

from agent.memory import Memory, file_stat
from agent.memory_read import opening
from agent.protocols import SessionView


class MemoryWatch:
    """A session ``Extension`` over the session's ``Memory``."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def tail_block(self, session: SessionView) -> str | None:
        blocks = changed_blocks(self.memory)
        return "\n\n".join(blocks) if blocks else None

    async def before_request(self, session: SessionView) -> None:
        return None

    async def aclose(self) -> None:
        return None


def changed_blocks(memory: Memory) -> list[str]:
    """The files ``memory`` sent earlier that changed since (edited, replaced or deleted), or
    whose imports did, as blocks to append at the tail: what was sent stays as it is, so the
    cached prefix does too."""
    out = []
    for name, entry in list(memory.sent.items()):
        level, scope, note, stat, digest = entry[:5]
        imports = entry[5] if len(entry) > 5 and isinstance(entry[5], dict) else {}
        path = Path(name)
        now = file_stat(path)
        if now == stat and all(file_stat(Path(p)) == s for p, s in imports.items()):
            continue
        if not path.is_file():
            memory.sent[name] = [level, scope, note, now, "", {}]
            if digest:
                out.append(
                    f"{opening(level, path)}\n[memory note: this file was "
                    "deleted during the session; what it said before no longer applies]\n"
                    "</memory>"
                )
            continue
        text = memory.block(level, path, scope, note)
        if memory.sent[name][4] != digest:
            head, _, body = text.partition("\n")
            what = (
                "changed during the session; this is its text now, and it replaces what it "
                "said before"
                if digest
                else "was created during the session; this is its text"
            )
            out.append(f"{head}\n[memory note: this file {what}]\n{body}")
    return out
