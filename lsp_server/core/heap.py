"""The host process's long-lived heap, frozen out of the garbage collector's full walks.

A `kiln lsp` or `kiln acp` process keeps its modules, the provider SDK's models (pydantic
classes by the thousand), the grammars and the index's caches for its whole life: about
280,000 objects once a provider SDK is loaded. A full collection walks every one of them
(0.2–0.3 s on a 2-core machine, ``bench/host_heap.py``), and the interpreter starts one
wherever its allocation counts say: in the middle of a keystroke's re-index, a completion or a
search. After the first turn, when all of that is loaded, the host collects once, at a moment
of its choosing (a second after the turn's answer went out), and freezes what survives
(``gc.freeze``): later full collections walk only what came after it. `kiln lsp` freezes
once before that too, when its first index scan ends (``after_first_scan``): the editor's
keystrokes are re-indexed and searched long before any turn.

Only the server processes enable it (``enable``): a process that hosts Kiln inside something
else (a test run) keeps the collector as it was.
"""

from __future__ import annotations

import asyncio
import gc
import logging

log = logging.getLogger(__name__)

SETTLE_DELAY = 1.0  # seconds after the first turn ends: its answer is out, the user reads it

_enabled = False
_settled = False
_scanned = False


def enable() -> None:
    """Called by the server entry points (`kiln lsp`, `kiln acp`)."""
    global _enabled
    _enabled = True


def settle() -> bool:
    """Collect once and freeze the survivors; only the first call does anything."""
    global _settled
    if _settled:
        return False
    _settled = True
    gc.collect()
    gc.freeze()
    log.debug("heap settled: %d objects frozen", gc.get_freeze_count())
    return True


def after_first_scan() -> None:
    """`kiln lsp`'s first index scan ended: the grammars, the index's caches and what the scan
    loaded live for the session (~95,000 objects before any turn; one full collection over them
    took ~30 ms inside an edit of ``bench/lsp_edit.py``, ~4 ms once they were frozen). Collect
    and freeze them now; the first turn still settles what it loads (the provider SDK)."""
    global _scanned
    if not _enabled or _scanned:
        return
    _scanned = True
    gc.collect()
    gc.freeze()


def after_turn() -> None:
    """A turn ended: the first one schedules ``settle`` (if enabled)."""
    if not _enabled or _settled:
        return
    try:
        asyncio.get_running_loop().call_later(SETTLE_DELAY, settle)
    except RuntimeError:  # no loop (a synchronous caller): settle now
        settle()
