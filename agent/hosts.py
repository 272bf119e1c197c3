"""The headless host: events to a callback, permission questions to an optional asker, edits
straight to disk (with a stale-file check)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent.events import AgentEvent
from agent.protocols import Decision, EditOutcome, EditProposal, PermissionRequest
from agent.workspace import atomic_write, read_inside


class DiskHost:
    """The headless host: events go to a callback, edits go straight to disk, asks are denied."""

    def __init__(self, on_event: Any = None, answer: Any = None) -> None:
        self.on_event = on_event
        self.answer = answer

    async def emit(self, event: AgentEvent) -> None:
        if self.on_event is not None:
            result = self.on_event(event)
            if asyncio.iscoroutine(result):
                await result

    @property
    def unattended_reason(self) -> str:
        """Why nobody could be asked (so the refusal does not claim a user declined)."""
        if self.answer is not None:
            return ""
        return (
            "nobody to ask (no terminal): pass --yes, add an allow rule, or choose a --mode that"
            " allows it (auto-edit: workspace edits; yolo: commands too)"
        )

    async def request_permission(self, request: PermissionRequest) -> Decision:
        if self.answer is None:
            return "reject_once"
        result = self.answer(request)
        decision = await result if asyncio.iscoroutine(result) else result
        return (
            decision
            if decision in ("allow_once", "allow_always", "reject_always")
            else "reject_once"
        )

    def read_buffer(self, path: Path) -> str | None:
        return None

    async def apply_edit(self, edit: EditProposal) -> EditOutcome:
        path = Path(edit.meta["abspath"])
        root = Path(edit.meta["root"]) if edit.meta.get("root") else None
        if root is not None:  # reached again without links: the check may be long past
            current = read_inside(root, path) or ""
        else:
            # bytes decoded: read_text would turn \r\n into \n and the edit would look stale
            current = path.read_bytes().decode("utf-8") if path.exists() else ""
        if current != edit.old_text:
            return "stale"
        atomic_write(path, edit.new_text, root=root)
        return "applied"
