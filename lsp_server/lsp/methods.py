"""The ``kiln/*`` methods as a table of typed, module-level handlers.

A handler is ``async def name(ls: KilnServer, params: SomeParams) -> result`` marked with
``@kiln_method("kiln/...")``; each handler module lists its handlers in ``HANDLERS`` and
``register`` adds them to the pygls server. Registration is where params are parsed into their
dataclass and where failures become JSON-RPC errors: a user mistake is an error with our code,
a message and ``data.hint``, never a traceback. The method list that ``kiln/hello`` and the
``initialize`` result report is read back from the server's own feature table, so it cannot
drift from what is registered.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from pygls.exceptions import JsonRpcException

from kiln_errors import KilnError
from lsp_server.lsp.host import REQUEST_PERMISSION, UPDATE, plain_json
from lsp_server.lsp.params import parse
from lsp_server.lsp.rpc import to_rpc_error

log = logging.getLogger("kiln.lsp.methods")

PREFIX = "kiln/"
# Methods the server sends to the client (the client implements these).
SERVER_TO_CLIENT = (UPDATE, REQUEST_PERMISSION)

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


@dataclass(frozen=True)
class KilnMethod:
    name: str
    handler: Callable[[Any, Any], Awaitable[Any]]
    params: type
    notification: bool


def kiln_method(name: str, *, notification: bool = False) -> Callable[[F], F]:
    """Mark ``fn`` as the handler of ``name``; ``register`` reads the mark."""
    if not name.startswith(PREFIX):
        raise ValueError(f"{name!r} is not a kiln/* method")

    def decorate(fn: F) -> F:
        fn.kiln_method = (name, notification)  # type: ignore[attr-defined]
        return fn

    return decorate


def describe(fn: Callable[..., Awaitable[Any]]) -> KilnMethod:
    name, notification = fn.kiln_method  # type: ignore[attr-defined]
    params = fn.__annotations__["params"]
    if isinstance(params, str):  # postponed annotations: the params class is a runtime import
        params = eval(params, fn.__globals__)  # noqa: S307 - a name from the handler's module
    return KilnMethod(name, fn, params, notification)


def register(server: Any, handlers: Iterable[Callable[..., Awaitable[Any]]]) -> None:
    for fn in handlers:
        method = describe(fn)
        server.feature(method.name)(_endpoint(method))
        if method.notification:  # sent with an id, refused -32601 (KilnProtocol.refused)
            server.protocol.kiln_notifications.add(method.name)


def registered(server: Any) -> list[str]:
    """The ``kiln/*`` methods a client may call on ``server``, from its feature table."""
    return sorted(name for name in server.protocol.fm.features if name.startswith(PREFIX))


def _endpoint(method: KilnMethod) -> Callable[..., Awaitable[Any]]:
    async def endpoint(ls: Any, params: Any = None) -> Any:
        try:
            return await method.handler(ls, parse(method.params, plain_json(params)))
        except JsonRpcException:
            raise
        except Exception as exc:
            if method.notification:  # nobody to answer: log it
                log.warning("%s: %s", method.name, exc)
                return None
            if isinstance(exc, KilnError):  # ours, with a hint: CoreError and every table
                log.info("%s failed: %s", method.name, exc)
                raise to_rpc_error(exc) from None
            log.exception("%s crashed", method.name)
            raise JsonRpcException(message=f"{type(exc).__name__}: {exc}", code=-32603) from None

    endpoint.__name__ = endpoint.__qualname__ = method.handler.__name__
    endpoint.__doc__ = method.handler.__doc__
    return endpoint
