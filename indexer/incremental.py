"""Incremental re-parsing of files edited one at a time (editor buffers, watcher events).

tree-sitter re-parses an edited file in a fraction of a full parse when told what changed. The
edit is recovered by diffing the new bytes against the last version seen (common prefix and
suffix), so callers never have to send edit ranges, and a stale cache entry costs only a
bigger edit, never a wrong tree.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

CACHE_FILES = 32  # trees kept for the most recently edited files


def _prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix (binary search over C-speed slice compares)."""
    ma, mb = memoryview(a), memoryview(b)
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ma[lo:mid] == mb[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _suffix(a: bytes, b: bytes, limit: int) -> int:
    """Length of the common suffix, at most ``limit``."""
    ma, mb = memoryview(a), memoryview(b)
    la, lb = len(a), len(b)
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ma[la - mid : la - lo] == mb[lb - mid : lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _point(data: bytes, offset: int) -> tuple[int, int]:
    row = data.count(b"\n", 0, offset)
    return row, offset - (data.rfind(b"\n", 0, offset) + 1)


def byte_edit(old: bytes, new: bytes) -> dict[str, Any] | None:
    """The single edit turning ``old`` into ``new``, in tree-sitter's terms; None if equal."""
    if old == new:
        return None
    start = _prefix(old, new)
    same_tail = _suffix(old, new, min(len(old), len(new)) - start)
    old_end, new_end = len(old) - same_tail, len(new) - same_tail
    return {
        "start_byte": start,
        "old_end_byte": old_end,
        "new_end_byte": new_end,
        "start_point": _point(old, start),
        "old_end_point": _point(old, old_end),
        "new_end_point": _point(new, new_end),
    }


class TreeCache:
    """Last bytes and tree per recently edited file; thread-safe, bounded."""

    def __init__(self, size: int = CACHE_FILES) -> None:
        self.size = size
        self._items: OrderedDict[str, tuple[str, bytes, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def parse(self, rel: str, language: str, data: bytes, parser: Any) -> Any:
        with self._lock:
            old = self._items.pop(rel, None)
        if old is not None and old[0] == language:
            _, old_data, tree = old
            edit = byte_edit(old_data, data)
            if edit is not None:
                tree.edit(**edit)
                tree = parser.parse(data, tree)
        else:
            tree = parser.parse(data)
        with self._lock:
            self._items[rel] = (language, data, tree)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return tree

    def forget(self, rel: str) -> None:
        with self._lock:
            self._items.pop(rel, None)
