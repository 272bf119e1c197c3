"""JSON-RPC 2.0's rules for the envelope of a message, applied before the ACP SDK sees it.

The SDK answers whatever carries a ``method``: an ``id`` of ``true`` or ``{}`` came back as the
id of a result, a message without ``"jsonrpc": "2.0"`` was served, a ``method`` that is not a
string was "method not found", and a request that omitted ``params`` (which JSON-RPC allows) was
refused as invalid params even where every parameter is optional (``session/list``). Here a
request or notification that is not JSON-RPC 2.0 gets -32600 (ACP's ``RequestId`` is an
integer, a string or null), and omitted params become ``{}``.

A message without a ``method`` is an answer to one of the agent's requests and is never
answered in turn (two peers must not trade errors about errors): with a usable id it fails the
waiting request when malformed instead of leaving it to wait for ever (the SDK fails one with
neither a result nor an error; one without ``"jsonrpc": "2.0"`` or with both, which the SDK
read as its result, a permission granted, and one whose error is no error object, on which
the SDK's reading loop crashed and the connection with it, fail here: ``MalformedAnswer``);
with an unusable id it is dropped (``id: true`` would match request 1 in a Python dict).

A batch (a JSON array) is not ACP v1, which sends one message per line: each request in it is
answered -32600 under its own id, all in one array as JSON-RPC answers a batch, so no request
waits for an answer that never comes (``batch_refusals``). An answer in a batch is answered
nothing, as on a line of its own; the request of Kiln's it answers fails at once
(``batch_answers``) instead of waiting for its timeout.
"""

from __future__ import annotations

from typing import Any

INVALID_REQUEST = -32600


class EnvelopeError(Exception):
    """The message is not JSON-RPC 2.0; answer ``code`` to ``msg_id``."""

    def __init__(self, msg_id: Any, detail: str) -> None:
        super().__init__(detail)
        self.msg_id = msg_id
        self.code = INVALID_REQUEST


class Dropped(Exception):
    """An answer that cannot belong to any request of ours: log it, answer nothing."""


class MalformedAnswer(Exception):
    """An answer to request ``msg_id`` of ours that breaks JSON-RPC 2.0 (no ``"jsonrpc":
    "2.0"``, or both a result and an error): that request fails, nothing is answered."""

    def __init__(self, msg_id: int | str, detail: str) -> None:
        super().__init__(detail)
        self.msg_id = msg_id


def valid_id(msg_id: Any) -> bool:
    return msg_id is None or (isinstance(msg_id, int | str) and not isinstance(msg_id, bool))


def _error_object(error: Any) -> bool:
    """JSON-RPC 2.0's error object: an integer ``code`` and a string ``message``."""
    if not isinstance(error, dict):
        return False
    code = error.get("code")
    return (
        isinstance(code, int)
        and not isinstance(code, bool)
        and isinstance(error.get("message"), str)
    )


def well_formed(message: dict[str, Any]) -> dict[str, Any]:
    """The message as the SDK should see it; raises ``EnvelopeError`` for a request it must
    not serve and ``Dropped`` for an answer it must not see."""
    if "method" not in message:
        if "id" in message and valid_id(message["id"]) and message["id"] is not None:
            if message.get("jsonrpc") != "2.0":  # read as it stood, `id` and `result` sufficed
                raise MalformedAnswer(message["id"], 'an answer must carry "jsonrpc": "2.0"')
            if "result" in message and "error" in message:  # the SDK took the result
                raise MalformedAnswer(
                    message["id"], "an answer holds a result or an error, not both"
                )
            if "error" in message and not _error_object(message["error"]):  # the SDK crashed
                raise MalformedAnswer(
                    message["id"], "an answer's error must be an object with a code and a message"
                )
            return message  # an answer to one of ours (one with neither fails in the SDK)
        if "id" in message or "result" in message or "error" in message:
            raise Dropped("an answer without a usable id")
        raise EnvelopeError(None, "a message needs a method, or an id and a result or error")
    if "id" in message and not valid_id(message["id"]):
        raise EnvelopeError(None, "id must be an integer, a string or null")
    msg_id = message.get("id")
    if message.get("jsonrpc") != "2.0":
        raise EnvelopeError(msg_id, 'a message must carry "jsonrpc": "2.0"')
    if not isinstance(message["method"], str):
        raise EnvelopeError(msg_id, "method must be a string")
    if message.get("params") is None:  # JSON-RPC lets a request or notification omit params
        return {**message, "params": {}}
    return message


BATCH_REFUSED = "batches are not supported: ACP v1 sends one message per line"


ANSWER_KEYS = frozenset({"id", "result", "error"})


def _is_answer(entry: Any) -> bool:
    """An entry without a ``method`` that carries an ``id``, a ``result`` or an ``error``."""
    return isinstance(entry, dict) and "method" not in entry and bool(entry.keys() & ANSWER_KEYS)


def batch_answers(batch: list[Any]) -> list[int | str]:
    """The ids of the answers a batch holds (to requests of Kiln's), each usable as an id."""
    return [
        entry["id"]
        for entry in batch
        if _is_answer(entry) and valid_id(entry.get("id")) and entry.get("id") is not None
    ]


def batch_refusals(batch: list[Any]) -> list[dict[str, Any]]:
    """The answers to a non-empty batch: -32600 for each request (under its id) and for each
    entry that is no message (``id: null``); none for notifications, nor for answers (two peers
    must not trade errors about errors). May be empty."""
    answers = []
    for entry in batch:
        if isinstance(entry, dict) and "method" in entry and "id" not in entry:
            continue  # a notification: never answered
        if _is_answer(entry):
            continue  # an answer to a request of Kiln's: that request fails (``batch_answers``)
        msg_id = entry.get("id") if isinstance(entry, dict) else None
        if not valid_id(msg_id) or not (isinstance(entry, dict) and "method" in entry):
            msg_id = None  # no message at all: refused without an id
        detail = BATCH_REFUSED if msg_id is not None else "a batch entry that is not a request"
        error = {"code": INVALID_REQUEST, "message": "Invalid request", "data": {"details": detail}}
        answers.append({"jsonrpc": "2.0", "id": msg_id, "error": error})
    return answers
