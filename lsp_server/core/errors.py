"""Errors the core answers requests with: each carries the JSON-RPC ``code`` to reply with,
plus the ``hint``/``exit_code`` shape of ``agent.errors`` so the CLI can print them too.
"""

from __future__ import annotations

import json
from typing import Any

from agent.errors import KilnError
from kiln_errors.shown import cut

# JSON-RPC error codes, outside the ranges JSON-RPC (-32768..-32000) and LSP reserve.
SESSION_NOT_FOUND = -31001
TURN_IN_PROGRESS = -31002
STALE_DOCUMENT = -31003
NOT_ALLOWED = -31004
NOT_AVAILABLE = -31005
INVALID_PARAMS = -32602  # the standard one, for malformed params
INVALID_REQUEST = -32600
MAX_MESSAGE = 500  # characters of an error's message or hint; a longer one is cut in the middle


def short(text: str) -> str:
    """An error's message or hint as a client is answered with it: whole up to
    ``MAX_MESSAGE`` characters, else its head and tail around "…" (a message quoting what the
    client sent, a 5 MB session id say, is not sent back whole)."""
    return cut(text, MAX_MESSAGE)


def id_in_use(msg_id: Any) -> tuple[str, str]:
    """The message and hint refusing a request that reuses the id of a request of the client's
    not answered yet: JSON-RPC wants ids unique among those, else neither the answers nor a
    cancellation of that id could tell the two apart (both front-ends refuse it, -32600)."""
    return (
        f"request id {cut(json.dumps(msg_id))} is already in use by a request not answered yet",
        "give each request an id of its own until it is answered",
    )


class CoreError(KilnError):
    """A request the core refuses; ``code`` is the JSON-RPC error code to answer with."""

    code = NOT_ALLOWED
    data: dict[str, Any] | None = None  # extra JSON for the error response (besides the hint)

    def __init__(self, message: str, *, hint: str | None = None, code: int | None = None) -> None:
        super().__init__(message, hint=hint)
        if code is not None:
            self.code = code


class UnknownSession(CoreError):
    code = SESSION_NOT_FOUND


class TurnInProgress(CoreError):
    code = TURN_IN_PROGRESS


class InvalidParams(CoreError):
    code = INVALID_PARAMS


class NotAvailable(CoreError):
    code = NOT_AVAILABLE
