"""One deadline for a whole registry request: name resolution, connect, headers and body.

Each network wait is bounded by httpx's timeout, so a registry that sends a byte now and then
holds a request for as long as it likes; and name resolution (``getaddrinfo``, before any
socket exists) has no timeout of ours at all and cannot be interrupted. So the request runs in
a worker thread and the caller waits for it until the deadline: at the deadline the caller
gets its error at once, the connections the worker uses are shut down (which ends any wait on
them), and a worker still resolving the name closes its connection as soon as it has one,
before it sends a byte (``Attempt.trace``).
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from skills_registry.registry.errors import UsageError

DEADLINE_VAR = "KILN_REGISTRY_DEADLINE"
DEFAULT_DEADLINE = 300.0  # seconds: a whole request, however slowly its bytes come
MAX_DEADLINE = 86400.0  # a day: 8 MB at 100 bytes/s; past ~1e10 a thread's wait overflows

T = TypeVar("T")


def deadline_from_env() -> float:
    """``KILN_REGISTRY_DEADLINE`` seconds (a slow link that needs longer), else 5 minutes."""
    text = os.environ.get(DEADLINE_VAR, "").strip()
    if not text:
        return DEFAULT_DEADLINE
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or value > MAX_DEADLINE:
        raise UsageError(
            f"{DEADLINE_VAR} must be a number of seconds above 0 and at most "
            f"{MAX_DEADLINE:g} (a day), not {text[:40]!r}",
            hint=f"unset it for the default of {DEFAULT_DEADLINE:g}s",
        )
    return value


class Unreached(Exception):
    """The deadline passed before the request had a connection (resolving or connecting)."""


class Unfinished(Exception):
    """The deadline passed while the request was connected: the answer did not finish."""


class Connections:
    """The sockets of one client's connections, for shutting them down at a deadline."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets = [s for s in self._sockets if s.fileno() != -1] + [sock]

    def shut_down(self) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class Attempt:
    """One request's run: its trace hook for httpx, and what the caller and worker share."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections
        self.abandoned = threading.Event()
        self.connecting = False

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpx's trace hook, in the worker: keep each new connection's socket; once the
        caller gave up, close a connection the moment it exists (the name took too long to
        resolve), so an abandoned request never sends a byte."""
        if event == "connection.connect_tcp.started":
            self.connecting = True
        elif event == "connection.connect_tcp.complete":
            self.connecting = False
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if self.abandoned.is_set():
                if sock is not None:
                    sock.close()
                raise Unreached("abandoned: the caller's deadline passed")
            if sock is not None:
                self._connections.add(sock)


def within(seconds: float, connections: Connections, work: Callable[[Attempt], T]) -> T:
    """``work(attempt)`` in a worker thread, its result or its exception; ``Unreached`` or
    ``Unfinished`` when it has not returned ``seconds`` from now."""
    attempt = Attempt(connections)
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, work(attempt)))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it
            outcome.append((False, exc))

    worker = threading.Thread(target=run, name="kiln-registry-request", daemon=True)
    worker.start()
    try:
        worker.join(max(0.0, seconds))
    finally:
        late = worker.is_alive()  # the deadline, or the caller interrupted (Ctrl-C)
        unreached = attempt.connecting
        if late:  # what the worker does from here on is not this request's answer
            attempt.abandoned.set()
            connections.shut_down()
    if late:
        raise Unreached() if unreached else Unfinished()
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    return value  # type: ignore[no-any-return]
