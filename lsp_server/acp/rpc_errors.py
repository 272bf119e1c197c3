"""The JSON-RPC errors of `kiln acp`'s handlers: Kiln's typed errors as one line and a hint.

Every ACP method ``KilnAcpAgent`` answers is wrapped in ``rpc_errors``: before ``initialize``
it is -32600; a core error keeps its code, an unknown session is ACP's -32002, a session busy
in another Kiln process is told how to continue, any other Kiln error is -32603 with its hint,
never a traceback. A message or hint that quotes what the client sent (an unknown session id, a
relative ``cwd``) keeps its head and tail only: a 5 MB session id came back as a 5 MB error.
The wrapper also counts the running request in the agent's ``inflight``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from acp import RequestError

from agent.errors import KilnError, SessionBusy, SessionNotFound
from lsp_server.core import SESSION_NOT_FOUND, TURN_IN_PROGRESS, CoreError
from lsp_server.core.errors import short

if TYPE_CHECKING:
    from lsp_server.acp.server import KilnAcpAgent

INTERNAL_ERROR = -32603
INVALID_REQUEST = -32600
RESOURCE_NOT_FOUND = -32002

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def rpc_errors(fn: F) -> F:
    """Turn Kiln's typed errors into JSON-RPC errors: one line and a hint, no traceback."""

    @functools.wraps(fn)
    async def wrapper(self: KilnAcpAgent, *args: Any, **kwargs: Any) -> Any:
        if not self.initialized and fn.__name__ != "initialize":  # ACP: -32600 until then
            raise not_initialized()
        task = asyncio.current_task()
        if task is not None:
            self.inflight.add(task)
        try:
            return await fn(self, *args, **kwargs)
        except RequestError as exc:
            raise RequestError(exc.code, short(str(exc)), exc.data) from None
        except CoreError as exc:
            raise _request_error(exc.code, exc) from None
        except SessionNotFound as exc:
            raise _request_error(SESSION_NOT_FOUND, exc) from None
        except SessionBusy as exc:  # a turn of this session in another Kiln process
            if "--resume" in (getattr(exc, "hint", "") or ""):  # behind what it stored since
                exc.hint = "load the session again (session/load) to continue from there"
            raise _request_error(TURN_IN_PROGRESS, exc) from None
        except KilnError as exc:  # e.g. no model provider configured: the hint says how
            raise _request_error(INTERNAL_ERROR, exc) from None
        finally:
            if task is not None:
                self.inflight.discard(task)

    return wrapper  # type: ignore[return-value]


def not_initialized() -> RequestError:
    """The answer to a request other than ``initialize`` before the handshake (also one of an
    unknown method or with malformed params: the handshake comes first, as in `kiln lsp`)."""
    return RequestError(
        INVALID_REQUEST, "send initialize first", {"hint": "the ACP handshake comes first"}
    )


def _request_error(code: int, exc: BaseException) -> RequestError:
    hint = short(getattr(exc, "hint", "") or "")
    if code == SESSION_NOT_FOUND:  # ACP's own code for an unknown session
        code = RESOURCE_NOT_FOUND
    return RequestError(code, short(str(exc)), {"hint": hint} if hint else None)
