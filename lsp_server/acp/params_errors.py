"""Params the ACP SDK cannot read: one line naming the field, not pydantic's dump.

The SDK validates a request's params before Kiln's handler runs and answers a failure with
"Invalid params" and pydantic's errors in ``data``, each carrying its ``input``: a 5 MB prompt
without its ``sessionId`` came back as a 5 MB error. The stdio guard checks params with the
same models first (``params_error``) and answers with one line saying which field and why
(``invalid params: sessionId: Field required``); ``data.errors`` keeps each problem's ``loc``,
``msg`` and ``type`` only.
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
    try:
        model.model_validate(message.get("params"))
    except ValidationError as exc:
        return readable(exc).to_error_obj()
    return None
