"""Turning handler failures into JSON-RPC errors a client can act on.

``kiln/*`` handlers raise core errors; ``methods`` turns them into error responses with our
code, a message and ``data.hint`` (``to_rpc_error``), never a traceback or an "internal error"
for something the user can fix.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from agent.errors import ConfigError, PermissionDenied, SessionNotFound, UsageError
from lsp_server.core import (
    INVALID_PARAMS,
    NOT_ALLOWED,
    SESSION_NOT_FOUND,
    CoreError,
)

log = logging.getLogger("kiln.lsp.rpc")

REQUEST_FAILED = -31000
INT32 = 2**31

Handler = Callable[[Any, dict[str, Any]], Awaitable[Any]]


def to_rpc_error(exc: BaseException) -> JsonRpcException:
    hint = getattr(exc, "hint", "") or ""
    if isinstance(exc, CoreError):
        code = exc.code
    elif isinstance(exc, SessionNotFound):
        code = SESSION_NOT_FOUND
    elif isinstance(exc, ConfigError | UsageError):
        code = INVALID_PARAMS
    elif isinstance(exc, PermissionDenied):  # PathOutsideWorkspace included
        code = NOT_ALLOWED
    else:
        code = REQUEST_FAILED
    data = {**({"hint": hint} if hint else {}), **(getattr(exc, "data", None) or {})}
    return JsonRpcException(message=str(exc), code=code, data=data or None)


def json_converter() -> Any:
    """pygls's converter, except that params/results of methods it does not know stay dicts.

    By default pygls turns them into namedtuples, which renames keys that are not Python
    identifiers (``_meta`` included) and so loses data a client sent.
    """
    from pygls.protocol import (
        JsonRPCNotification,
        JsonRPCRequestMessage,
        JsonRPCResponseMessage,
        default_converter,
    )

    converter = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    for doc in (types.TextDocumentItem, types.VersionedTextDocumentIdentifier):
        converter.register_structure_hook(doc, _any_version(converter.get_structure_hook(doc)))
    return converter


def _any_version(structure: Callable[[Any, type], Any]) -> Callable[[Any, type], Any]:
    """A document version as the client sent it. LSP types it ``integer`` (32 bits) and
    lsprotocol refuses larger ones, but clients count past 2^31 (a version per keystroke, or a
    timestamp): the didOpen or didChange was dropped and the buffer lost its text."""

    def hook(obj: Any, cls: type) -> Any:
        version = obj.get("version") if isinstance(obj, dict) else None
        if isinstance(version, bool) or not isinstance(version, int) or -INT32 <= version < INT32:
            return structure(obj, cls)
        made = structure({**obj, "version": 0}, cls)
        object.__setattr__(made, "version", version)  # past the field's 32-bit validator
        return made

    return hook


class QuietUserErrors(logging.Filter):
    """pygls logs every error response with a traceback; for a user's mistake (any error code
    but "internal error") one line is enough, so the traceback is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, ValueError | BrokenPipeError | ConnectionError) and "send" in str(
            record.msg
        ):  # the client left: nothing to fix, nothing to trace
            record.msg, record.args, record.exc_info, record.exc_text = (
                f"client gone, message dropped ({exc})",
                (),
                None,
                None,
            )
        elif isinstance(exc, JsonRpcException) and exc.code != -32603:
            record.msg = f"request failed ({exc.code}): {exc.message}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True
