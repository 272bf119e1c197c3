"""Incremental re-parsing of files edited one at a time (editor buffers, watcher events).

tree-sitter re-parses an edited file in a fraction of a full parse when told what changed. The
edit is recovered by diffing the new bytes against the last version seen (common prefix and
suffix), so callers never have to send edit ranges, and a stale cache entry costs only a
bigger edit, never a wrong tree.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

CACHE_FILES = 32  # trees kept for the most recently edited files


def _prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix (binary search over C-speed slice compares: ``bytes``
    slices, whose ``==`` is a memcmp; a memoryview's compares item by item, 70x slower)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _suffix(a: bytes, b: bytes, limit: int) -> int:
    """Length of the common suffix, at most ``limit``."""
    la, lb = len(a), len(b)
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid : la - lo] == b[lb - mid : lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _point(data: bytes, offset: int, start: int, start_row: int) -> tuple[int, int]:
    """Row and column of ``offset``, counting newlines only from ``start`` (at ``start_row``),
    forward or back."""
    if offset >= start:
        row = start_row + data.count(b"\n", start, offset)
    else:
        row = start_row - data.count(b"\n", offset, start)
    return row, offset - (data.rfind(b"\n", 0, offset) + 1)


def byte_edit(old: bytes, new: bytes, known: tuple[int, int] = (0, 0)) -> dict[str, Any] | None:
    """The single edit turning ``old`` into ``new``, in tree-sitter's terms; None if equal.
    ``known`` (offset, row): ``old`` holds ``row`` newlines before ``offset`` (the last edit's
    start, see ``Entry.known``), so the rows are counted from there, not from the top."""
    if old == new:
        return None
    start = _prefix(old, new)
    same_tail = _suffix(old, new, min(len(old), len(new)) - start)
    old_end, new_end = len(old) - same_tail, len(new) - same_tail
    start_point = _point(old, start, *known)
    return {
        "start_byte": start,
        "old_end_byte": old_end,
        "new_end_byte": new_end,
        "start_point": start_point,
        "old_end_point": _point(old, old_end, start, start_point[0]),
        "new_end_point": _point(new, new_end, start, start_point[0]),
    }


@dataclass
class Entry:
    """The last version of a file seen: its bytes, tree and (when chunked) blocks."""

    language: str
    data: bytes
    tree: Any
    blocks: list[Any] | None = None
    digest: str | None = None  # content hash of ``data``, when the caller has it
    fresh: bool = True  # False: the tree's positions follow ``data`` but one function's
    # content is older (``rechunk`` re-parsed it on its own); never reuse it for parsing
    known: tuple[int, int] = (0, 0)  # (offset, row): ``data`` has ``row`` newlines before
    # ``offset``; the start of the edit that made it (the bytes before it are the old ones)


class TreeCache:
    """Last bytes, tree and blocks per recently edited file; thread-safe, bounded."""

    def __init__(self, size: int = CACHE_FILES) -> None:
        self.size = size
        self._items: OrderedDict[str, Entry] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, rel: str) -> Entry | None:
        """Remove and return a file's entry (the caller puts back the next version)."""
        with self._lock:
            return self._items.pop(rel, None)

    def has(self, rel: str) -> bool:
        with self._lock:
            return rel in self._items

    def put(self, rel: str, entry: Entry) -> None:
        with self._lock:
            self._items[rel] = entry
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    @staticmethod
    def reparse(entry: Entry, data: bytes, parser: Any) -> tuple[Any, dict | None, list]:
        """The tree of ``data`` from ``entry``'s tree (which is edited in place), the edit,
        and the ranges whose syntax changed."""
        edit = byte_edit(entry.data, data)
        if edit is None:
            return entry.tree, None, []
        old = entry.tree
        old.edit(**edit)
        tree = parser.parse(data, old_tree=old)  # a keyword: the second positional is not the tree
        return tree, edit, list(old.changed_ranges(tree))

    def parse(self, rel: str, language: str, data: bytes, parser: Any) -> Any:
        old = self.take(rel)
        tree = None
        if old is not None and old.language == language and old.fresh:
            tree = self.reparse(old, data, parser)[0]
            if tree.root_node.has_error:  # error recovery may differ from a fresh parse's
                tree = None
        if tree is None:
            tree = parser.parse(data)
        self.put(rel, Entry(language, data, tree))
        return tree

    def forget(self, rel: str) -> None:
        with self._lock:
            self._items.pop(rel, None)
