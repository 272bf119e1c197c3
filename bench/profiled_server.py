"""`kiln lsp` with every thread under cProfile on a CPU clock; for ``lsp_edit.py --profile``.

    python bench/profiled_server.py OUT_DIR        # then speaks LSP on stdio as `kiln lsp`

Each thread (the event loop, the index thread, ``asyncio.to_thread``'s workers) gets its own
profiler timed by ``time.thread_time`` (the thread's own CPU time, so other jobs on the host do
not show); at exit each is written to ``OUT_DIR/<thread name>.prof`` for ``pstats``.
"""

from __future__ import annotations

import atexit
import cProfile
import runpy
import sys
import threading
import time
from pathlib import Path

_PROFILES: list[tuple[str, cProfile.Profile]] = []


def _profiled_run(run):  # type: ignore[no-untyped-def]
    def wrapper(self: threading.Thread) -> None:
        prof = cProfile.Profile(time.thread_time)
        _PROFILES.append((self.name, prof))
        prof.enable()
        try:
            run(self)
        finally:
            prof.disable()

    return wrapper


def _dump(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for n, (name, prof) in enumerate(_PROFILES):
        prof.snapshot_stats()  # a thread still running: its stats so far
        prof.dump_stats(out / f"{n:02d}-{name}.prof")


def main() -> None:
    out = Path(sys.argv[1])
    threading.Thread.run = _profiled_run(threading.Thread.run)  # type: ignore[method-assign]
    main_prof = cProfile.Profile(time.thread_time)
    _PROFILES.append(("main", main_prof))
    atexit.register(_dump, out)
    sys.argv = ["kiln", "lsp"]
    main_prof.enable()
    try:
        runpy.run_module("lsp_server", run_name="__main__")
    finally:
        main_prof.disable()


if __name__ == "__main__":
    main()
