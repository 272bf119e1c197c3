"""`kiln lsp` that notes when each step of an edit ran, and on which thread; for
``lsp_edit.py --trace``.

    python bench/traced_server.py OUT_FILE        # then speaks LSP on stdio as `kiln lsp`

Each step's start (``name>``) and end (``name<``) is kept in memory as ``perf_counter_ns`` (the
monotonic clock, the same in every process of the machine, so the bench's own send and receive
times line up with it), the thread's id and its CPU time (``thread_time_ns``), and written to
OUT_FILE at exit, one ``ns tid cpu_ns name`` line each. Nothing here releases the GIL or reads
a file while the server runs: a probe that did (reading ``/proc``) made threads wait for each
other as they otherwise do not.
"""

from __future__ import annotations

import atexit
import functools
import runpy
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_EVENTS: list[tuple[int, int, int, str]] = []


def note(name: str) -> None:
    _EVENTS.append((time.perf_counter_ns(), threading.get_native_id(), time.thread_time_ns(), name))


def traced(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    if fn.__code__.co_flags & 0x80:  # a coroutine function

        @functools.wraps(fn)  # pygls reads a handler's parameters
        async def coroutine(*args: Any, **kwargs: Any) -> Any:
            note(name + ">")
            try:
                return await fn(*args, **kwargs)
            finally:
                note(name + "<")

        return coroutine

    @functools.wraps(fn)
    def function(*args: Any, **kwargs: Any) -> Any:
        note(name + ">")
        try:
            return fn(*args, **kwargs)
        finally:
            note(name + "<")

    return function


def _dump(out: Path) -> None:
    with out.open("w", encoding="utf-8") as f:
        f.writelines(f"{t} {tid} {cpu} {name}\n" for t, tid, cpu, name in list(_EVENTS))


def main() -> None:
    out = Path(sys.argv[1])
    from pygls.protocol import json_rpc

    from indexer import index
    from lsp_server.lsp import documents, features, transport

    steps: list[tuple[Any, str, str]] = [
        (transport.KilnProtocol, "receive", "receive"),
        (documents.IndexSync, "flush", "flush"),
        (documents.IndexSync, "flush_then", "flush"),
        (documents.IndexSync, "_write_buffers", "write"),
        (index.Index, "update_file", "update_file"),
        (index.Index, "search", "search"),
        (json_rpc.JsonRPCProtocol, "_send_data", "send"),
    ]
    for owner, attr, name in steps:
        if hasattr(owner, attr):  # an older checkout may lack a step
            setattr(owner, attr, traced(getattr(owner, attr), name))
    features.FEATURES[:] = [
        (method, traced(fn, "hover") if fn is features.hover else fn)
        for method, fn in features.FEATURES
    ]
    atexit.register(_dump, out)
    sys.argv = ["kiln", "lsp"]
    runpy.run_module("lsp_server", run_name="__main__")


if __name__ == "__main__":
    main()
