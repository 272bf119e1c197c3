"""ACP's ``$/cancel_request`` notification for `kiln acp`: cancelling a running ``session/prompt``.

Either peer may cancel one of its outstanding requests by id (optional in ACP v1; the official
TypeScript SDK sends it when a request's cancellation signal fires, and then keeps waiting for
the answer). The only Kiln request that runs long is ``session/prompt``, so a cancel of one is
the same as ``session/cancel`` of its session: the turn stops and the prompt answers
``stopReason: "cancelled"`` (ACP accepts a valid result in place of error -32800). A cancel of
any other request, finished or unknown, changes nothing.

The Python SDK hands the agent neither JSON-RPC ids nor ``$/`` methods, so the stdio guard
(``route``) tags each ``session/prompt`` with its id in ``_meta`` and renames ``$/cancel_request``
to an extension notification the SDK does deliver; ``PromptRequests`` maps ids to the sessions
whose turns they started.
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

REQUEST_ID_KEY = "kiln/requestId"  # in a session/prompt's _meta, set by the guard
EXTENSION_METHOD = "_kiln/cancel_request"  # what `$/cancel_request` becomes for the SDK
EXTENSION_NAME = EXTENSION_METHOD[1:]  # as the SDK passes it to ``ext_notification``


def route(message: dict[str, Any]) -> dict[str, Any]:
    """The message as the SDK should see it (the same object when nothing changes)."""
    method = message.get("method")
    params = message.get("params")
    if method == "session/prompt" and "id" in message and _well_formed(params):
        tagged = {**(params.get("_meta") or {}), REQUEST_ID_KEY: message["id"]}
        return {**message, "params": {**params, "_meta": tagged}}
    if method == "$/cancel_request" and "id" not in message:
        return {**message, "method": EXTENSION_METHOD}
    return message


def _well_formed(params: Any) -> TypeGuard[dict[str, Any]]:
    """Worth tagging: anything else is refused by the SDK (-32602) before a turn could start,
    and its error should echo the params as the client sent them."""
    return (
        isinstance(params, dict)
        and isinstance(params.get("sessionId"), str)
        and isinstance(params.get("prompt"), list)
        and isinstance(params.get("_meta", {}) or {}, dict)
    )


class PromptRequests:
    """Which session's turn each running ``session/prompt`` request started."""

    def __init__(self) -> None:
        self._sessions: dict[str, str] = {}  # canonical request id -> session id

    def started(self, request_id: Any, session_id: str) -> str | None:
        """Note a prompt whose turn is about to run; returns the key to pass to ``ended``."""
        if request_id is None:
            return None
        key = json.dumps(request_id)
        self._sessions[key] = session_id
        return key

    def ended(self, key: str | None) -> None:
        if key is not None:
            self._sessions.pop(key, None)

    def session_of(self, params: Any) -> str | None:
        """The session whose turn ``$/cancel_request`` params name, if it is still running."""
        if not isinstance(params, dict) or "requestId" not in params:
            return None
        return self._sessions.get(json.dumps(params["requestId"]))
