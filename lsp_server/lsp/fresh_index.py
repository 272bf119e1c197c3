"""The index as the agent's tools see it through ``kiln lsp``: the editor's buffers first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lsp_server.lsp.documents import IndexSync


class FreshIndex:
    """The index as the agent's tools see it: a search first takes in the buffers typed since
    the last (debounced) re-index, so the model finds what the editor shows, saved or not; the
    agent's own re-index after an edit goes through the index thread, for what the editor or
    the disk holds (a deferred edit is neither, until it is accepted)."""

    def __init__(self, sync: IndexSync, holds: Callable[[Path, str], bool]) -> None:
        self._sync = sync
        self._holds = holds

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sync.index, name)

    def search(self, *args: Any, **kwargs: Any) -> Any:
        self._sync.flush_blocking()  # the search stays on this thread: see ``features.hover``
        return self._sync.index.search(*args, **kwargs)

    def update_file(self, path: str | Path, text: str | None = None) -> int:
        full = Path(path) if Path(path).is_absolute() else self._sync.root / path
        if text is None or self._holds(full, text):
            self._sync.queue_update(full, text)
        return 0
