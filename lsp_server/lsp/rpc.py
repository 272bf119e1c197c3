"""Turning handler failures into JSON-RPC errors a client can act on.

``kiln/*`` handlers raise core errors; ``methods`` turns them into error responses with our
code, a message and ``data.hint`` (``to_rpc_error``), never a traceback or an "internal error"
for something the user can fix.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from agent.errors import ConfigError, PermissionDenied, SessionNotFound, UsageError
from kiln_errors.shown import shown
from lsp_server.core import (
    INVALID_PARAMS,
    NOT_ALLOWED,
    SESSION_NOT_FOUND,
    CoreError,
)
from lsp_server.core.errors import short

log = logging.getLogger("kiln.lsp.rpc")

REQUEST_FAILED = -31000
INTERNAL_ERROR = -32603  # a bug of the server's; the client cannot fix it
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


def plain_error(error: types.ResponseError) -> types.ResponseError:
    """An error as the client is answered with it: a message or ``data.hint`` past
    ``MAX_MESSAGE`` characters keeps its head and tail (one quoting a 100,000-character
    session id or method name was sent back whole). An internal error (-32603) is also one
    line without ``data.traceback``: pygls puts the handler's traceback there, the server's
    insides (paths, source lines) for any client to read; it is logged on stderr, where it
    belongs."""
    data, message = error.data, str(error.message)
    if isinstance(data, dict) and isinstance(data.get("hint"), str):
        data = {**data, "hint": short(data["hint"])}
    if error.code == INTERNAL_ERROR:
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k != "traceback"} or None
        message = shown(" ".join(message.split()) or "internal error")
    return types.ResponseError(code=error.code, message=short(message), data=data)


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
    for kind, check in _PRIMITIVES.items():
        converter.register_structure_hook(kind, check)
    converter.register_structure_hook_factory(attrs.has, _objects_only(converter))
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    for doc in (types.TextDocumentItem, types.VersionedTextDocumentIdentifier):
        converter.register_structure_hook(doc, _any_version(converter.get_structure_hook(doc)))
    return converter


def _strict(kind: type, name: str, fits: Callable[[Any], bool]) -> Callable[[Any, type], Any]:
    """A hook that takes a JSON value of ``kind`` as it is and refuses any other. cattrs's
    default calls ``kind(value)``: a position's line sent as ``"3"``, ``2.5`` or ``true``
    became 3, 2 or 1, a URI sent as a number became a string, and the request was served for a
    place the client never named instead of answered with "invalid params"."""

    def hook(value: Any, _cls: type) -> Any:
        if not fits(value):
            raise TypeError(f"expected {name}, got {type(value).__name__} {value!r:.40}")
        return kind(value)

    return hook


def _objects_only(converter: Any) -> Callable[[type], Callable[[Any, type], Any]]:
    """LSP's object types built as lsprotocol builds them (fields under their camelCase wire
    names) from a JSON object only (or ``[]``, Neovim's empty table). cattrs read any value it
    could test keys with as one: ``"capabilities": "x"`` passed as capabilities of nothing
    (``"general": 5`` was an error, ``"general": "x"`` not). Classes with a hook of their own
    (LSP's unions) keep it."""
    from cattrs.gen import make_dict_structure_fn, override

    def factory(cls: type) -> Callable[[Any, type], Any]:
        names = {
            f.name: override(rename=_camel(f.name.removesuffix("_"))) for f in attrs.fields(cls)
        }
        structure: Callable[[Any, type], Any] = make_dict_structure_fn(
            cls,
            converter,
            **names,  # type: ignore[arg-type]  # lsprotocol passes them so
        )

        def hook(value: Any, kind: type) -> Any:
            if value == []:  # an empty Lua table, as Neovim encodes it: an empty object
                value = {}
            if not isinstance(value, dict):
                raise TypeError(f"expected an object, got {type(value).__name__} {value!r:.40}")
            return structure(value, kind)

        return hook

    return factory


_PRIMITIVES: dict[type, Callable[[Any, type], Any]] = {
    # an integral float (1.0) passes: some JSON encoders write every number as one
    int: _strict(
        int,
        "an integer",
        lambda v: (
            not isinstance(v, bool)
            and (isinstance(v, int) or (isinstance(v, float) and v.is_integer()))
        ),
    ),
    float: _strict(
        float, "a number", lambda v: not isinstance(v, bool) and isinstance(v, int | float)
    ),
    str: _strict(str, "a string", lambda v: isinstance(v, str)),
    bool: _strict(bool, "a boolean", lambda v: isinstance(v, bool)),
}


def why_unreadable(exc: BaseException) -> str:
    """One line saying where a message's params went wrong (``$.params.position.line: expected
    an integer, got str '0'``), not cattrs's "While structuring HoverRequest (1 sub-exception)"."""
    from cattrs import transform_error
    from cattrs.v import format_exception

    def say(error: BaseException, kind: Any) -> str:
        if isinstance(error, TypeError) and str(error).startswith("expected "):
            return str(error)  # one of ``_PRIMITIVES``: it names the type and the value
        if isinstance(error, ValueError) and str(error):
            return f"invalid value ({str(error)[:80]})"  # a field's own check: says which
        return format_exception(error, kind)

    try:
        lines = transform_error(exc, format_exception=say)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - not a cattrs error: its own text
        return str(exc)
    said = "; ".join(_wire_path(line) for line in lines)
    return said if len(said) <= 300 else said[:299] + "…"


def _wire_path(line: str) -> str:
    """``… @ $.params.text_document.uri`` as the client spelt it: ``… at $.params.textDocument.uri``."""
    what, at, where = line.rpartition(" @ ")
    if not at:
        return line
    return f"{what} at " + ".".join(_camel(part) for part in where.split("."))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


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
        elif isinstance(exc, JsonRpcException) and exc.code != INTERNAL_ERROR:
            record.msg = f"request failed ({exc.code}): {exc.message}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True
