"""Errors the core answers requests with: each carries the JSON-RPC ``code`` to reply with,
plus the ``hint``/``exit_code`` shape of ``agent.errors`` so the CLI can print them too.
"""

from __future__ import annotations

from typing import Any

from agent.errors import KilnError

# JSON-RPC error codes, outside the ranges JSON-RPC (-32768..-32000) and LSP reserve.
SESSION_NOT_FOUND = -31001
TURN_IN_PROGRESS = -31002
STALE_DOCUMENT = -31003
NOT_ALLOWED = -31004
NOT_AVAILABLE = -31005
INVALID_PARAMS = -32602  # the standard one, for malformed params


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
