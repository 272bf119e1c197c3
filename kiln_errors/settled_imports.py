"""Importing a large module once: the garbage collector paused meanwhile, then what the import
made frozen out of it (``gc.freeze``).

An SDK's pydantic or attrs models are thousands of objects, each class several: collection
after collection ran during their import, each scanning all that had been made so far (with
the collector paused, ``import anthropic`` took ~1.5 s of CPU instead of ~2.2, ``import openai``
~0.7 instead of ~1.3, pygls' lsprotocol ~0.4 instead of ~0.6), and interpreter shutdown's
collections scanned it all again at exit. Module-level objects live as long as the process
and, with no import-time side effects, hold no resource: no finaliser is skipped. Objects the
process made before are frozen too; any cyclic garbage among them is never collected (once,
at the first import: what was alive then).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["settled_imports"]

_SETTLED: set[str] = set()


@contextmanager
def settled_imports(once: str = "") -> Iterator[None]:
    """Run the block (its ``import`` statements, and a first use that imports more: an SDK
    loads its resources when the client first names them) with the collector paused, then
    freeze. Given ``once``, a name for the block, only its first run in the process does so:
    later ones import nothing, and a long-lived server should not freeze its objects at each
    session."""
    if once in _SETTLED:
        yield
        return
    if once:
        _SETTLED.add(once)
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
