"""Paths as the client spells them: its `cwd`, not where symbolic links lead.

Kiln works on resolved paths (the workspace check needs them), but a client that opened
``/work/link`` (on macOS, any folder under ``/tmp`` or ``/var``, which are links into
``/private``) knows its files under that name: ``fs/*`` requests, tool call ``locations`` and
diff paths under ``/work/real`` named files outside the folder it opened, so its buffers and
its follow-along missed them, and ``session/list`` for ``/work/link`` answered sessions "in"
``/work/real``. Each path under the resolved `cwd` is sent under the `cwd` the client gave.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def as_client_names(cwd: str, path: str) -> str:
    """``path`` under ``cwd`` as the client spelled it, when it lies under its resolution."""
    shown = Path(os.path.normpath(cwd))
    return _renamed(shown.resolve(), shown, path)


def _renamed(real: Path, shown: Path, path: str) -> str:
    where = Path(path)
    if where != real and real not in where.parents:
        return path
    return str(shown / where.relative_to(real))


class ClientPaths:
    """Per session: the resolved `cwd` and the `cwd` as the client sent it, when they differ."""

    def __init__(self) -> None:
        self._cwds: dict[str, tuple[Path, Path]] = {}

    def opened(self, session_id: str, cwd: str) -> None:
        shown = Path(os.path.normpath(cwd))
        real = shown.resolve()
        if real != shown:
            self._cwds[session_id] = (real, shown)
        else:
            self._cwds.pop(session_id, None)

    def path(self, session_id: str, path: str) -> str:
        """``path`` under the client's `cwd` when it lies under the resolved one."""
        if session_id not in self._cwds:
            return path
        return _renamed(*self._cwds[session_id], path)

    def update(self, session_id: str, update: dict[str, Any]) -> dict[str, Any]:
        """A tool call (update) with its ``locations`` and diff paths as the client names them
        (``rawInput`` stays as the model sent it)."""
        if session_id not in self._cwds:
            return update
        changed = dict(update)
        for key in ("locations", "content"):
            items = update.get(key)
            if isinstance(items, list):
                changed[key] = [self._item(session_id, item) for item in items]
        return changed

    def _item(self, session_id: str, item: Any) -> Any:
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            return {**item, "path": self.path(session_id, item["path"])}
        return item
