"""The ids of the client's requests `kiln acp` is still serving: JSON-RPC wants them unique.

A request that reuses the id of one not answered yet would be served and answered under the
same id, so neither its answer nor a ``$/cancel_request`` of that id could tell the two apart.
The stdio guard refuses it (-32600, without running it) and the first goes on untouched. An id
is free again once its answer is written: the SDK's connection shows each answer it sends to its
``observers`` right after writing it, before any later line of the client is read. A null id
is an id like any other (ACP's ``RequestId`` allows it): two requests under null in flight could
not be told apart either. The errors for lines whose id cannot be read, also answered under null,
are written by the stdio guard itself, not through the SDK, so they never free it.
"""

from __future__ import annotations

import json
from typing import Any

from lsp_server.core.errors import INVALID_REQUEST, id_in_use


class ClientRequests:
    """Request ids passed to the SDK and not answered yet (each as its JSON text: 1 is not "1")."""

    def __init__(self) -> None:
        self._open: set[str] = set()

    def refusal(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The error answer for ``message`` if its id is in use, else None (the id is taken)."""
        key = json.dumps(message["id"])
        if key in self._open:
            detail, hint = id_in_use(message["id"])
            return {"code": INVALID_REQUEST, "message": detail, "data": {"hint": hint}}
        self._open.add(key)
        return None

    def observe(self, event: Any) -> None:
        """An SDK stream observer: an answer the agent sent frees its id."""
        message = getattr(event, "message", None)
        if getattr(event, "direction", None) == "incoming" or not isinstance(message, dict):
            return
        if "method" not in message and "id" in message:
            self._open.discard(json.dumps(message["id"]))
