"""Params the ACP SDK cannot read: one line naming the field, not pydantic's dump.

The SDK validates a request's params before Kiln's handler runs and answers a failure with
"Invalid params" and pydantic's errors in ``data``, each carrying its ``input``: a 5 MB prompt
without its ``sessionId`` came back as a 5 MB error. The stdio guard checks params with the
same models first (``params_error``) and answers with one line saying which field and why
(``invalid params: sessionId: Field required``); ``data.errors`` keeps each problem's ``loc``,
``msg`` and ``type`` only.

The SDK's models are lax: ``"protocolVersion": "1"`` was read as 1 and a ``size`` of ``"12"``
as 12, so a client's typo passed as something it did not say. A value whose JSON type the model
changed (a string, a number, a boolean each read as another) is refused as the wrong type,
naming the field, as ``kiln lsp`` refuses it; so is a fraction where the model wants an integer
(``"protocolVersion": 1.5`` was read as 1; ``1.0`` is the integer 1, as JSON has one number type),
and null, an array or an object the model read as a number or a string (the SDK read
``"protocolVersion": null`` as 1). (A capability flag that is no boolean was set to
false before this check, as ACP's schema reads it: ``capabilities.booleans_only``.)
"""

from __future__ import annotations

from typing import Any

from acp import RequestError
from acp.schema import (
    AuthenticateRequest,
    InitializeRequest,
    ListSessionsRequest,
    LoadSessionRequest,
    NewSessionRequest,
    PromptRequest,
    SetSessionModeRequest,
)
from pydantic import BaseModel, ValidationError

INVALID_PARAMS = -32602
MAX_SHOWN = 10


def readable(exc: ValidationError) -> RequestError:
    problems = [
        {
            "loc": list(p.get("loc", ())),
            "msg": _line(p.get("msg", "invalid")),
            "type": p.get("type"),
        }
        for p in exc.errors()[:MAX_SHOWN]
    ]
    if not problems:
        return RequestError(INVALID_PARAMS, "invalid params")
    first = problems[0]
    where = ".".join(str(part) for part in first["loc"]) or "params"
    more = len(exc.errors()) - 1
    tail = f" (and {more} more)" if more else ""
    return RequestError(
        INVALID_PARAMS, f"invalid params: {where}: {first['msg']}{tail}", {"errors": problems}
    )


def _line(text: Any) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= 300 else flat[:299] + "…"


# The SDK's own models of the requests Kiln serves (``acp.agent.router``), to check params
# with first: the SDK keeps its handler private, so its answer cannot be reworded after it.
REQUESTS: dict[str, type[BaseModel]] = {
    "initialize": InitializeRequest,
    "authenticate": AuthenticateRequest,
    "session/new": NewSessionRequest,
    "session/load": LoadSessionRequest,
    "session/list": ListSessionsRequest,
    "session/prompt": PromptRequest,
    "session/set_mode": SetSessionModeRequest,
}


def params_error(message: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON-RPC error object for a request whose params the SDK would refuse, else None.
    Notifications are left to the SDK: nobody is owed an answer."""
    model = REQUESTS.get(message.get("method"))  # type: ignore[arg-type]
    if model is None or "id" not in message:
        return None
    params = message.get("params")
    try:
        read = model.model_validate(params)
    except ValidationError as exc:
        return readable(exc).to_error_obj()
    changed = _coerced(
        params, read.model_dump(by_alias=True, exclude_unset=True, mode="json", warnings=False)
    )
    if changed is None:
        return None
    where, said, wanted = changed
    problem = {"loc": where, "msg": f"Input should be {wanted}, not {said}", "type": "strict"}
    at = ".".join(str(part) for part in where) or "params"
    return RequestError(
        INVALID_PARAMS, f"invalid params: {at}: {problem['msg']}", {"errors": [problem]}
    ).to_error_obj()


def _kind(value: Any) -> str | None:
    """The JSON type of a primitive (an integer and a float are both numbers), None for the
    rest (objects, arrays and null are compared by their contents or not at all)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return None


_SHAPES = {type(None): "null", list: "an array", dict: "an object"}


def _coerced(
    sent: Any, read: Any, where: tuple[Any, ...] = ()
) -> tuple[list[Any], str, str] | None:
    """The first place where the model read a primitive as another JSON type: its path, the
    type sent and the type the model wanted. Fields the model dropped are not compared."""
    if isinstance(sent, dict) and isinstance(read, dict):
        for key, value in sent.items():
            if key in read and (found := _coerced(value, read[key], (*where, key))):
                return found
        return None
    if isinstance(sent, list) and isinstance(read, list) and len(sent) == len(read):
        for i, (value, model) in enumerate(zip(sent, read, strict=True)):
            if found := _coerced(value, model, (*where, i)):
                return found
        return None
    said, wanted = _kind(sent), _kind(read)
    if wanted and said != wanted:  # null, an array or an object read as a number (or string)
        return [*where], said or _SHAPES.get(type(sent), "another value"), wanted
    if isinstance(sent, float) and type(read) is int and sent != read:  # 1.5 was read as 1
        return [*where], "a fraction", "a whole number"
    return None
