"""Pieces of a file the chunker works on: a region of whole definitions, the region's lines
decoded on their own, and the text helpers that read tree-sitter nodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from indexer.blocks import MAX_DOCSTRING


@dataclass(frozen=True)
class Region:
    """Whole top-level nodes of a file to chunk on their own (an edit's neighbourhood): bytes
    ``[lo_byte, hi_byte)``, rows ``[first_row, end_row)``; ``first_part`` says whether the
    file's first preamble part (the one carrying the module docstring) falls inside."""

    lo_byte: int
    hi_byte: int
    first_row: int
    end_row: int
    first_part: bool
    scope: tuple[str, ...] | list[str] = ()  # names of the classes around the region


class RegionLines:
    """A file's lines as the chunker reads them (``lines[row]``, ``lines[a:b]``), decoded from
    ``first_row`` to ``end_row`` only; any other row decodes the whole file once."""

    def __init__(self, data: bytes, first_row: int, lo_byte: int, end_row: int) -> None:
        end = lo_byte
        for _ in range(end_row - first_row):
            end = data.find(b"\n", end) + 1
            if end == 0:
                end = len(data)
                break
        self.data, self.first = data, first_row
        self.own = data[lo_byte:end].decode("utf-8", errors="replace").split("\n")
        self.whole: list[str] | None = None

    def __len__(self) -> int:
        return len(self._all())

    def _all(self) -> list[str]:
        if self.whole is None:
            self.whole = self.data.decode("utf-8", errors="replace").split("\n")
        return self.whole

    def __getitem__(self, key: int | slice) -> Any:
        first, own = self.first, self.own
        if isinstance(key, slice):
            start, stop = key.start or 0, key.stop
            if start >= first and stop is not None and stop - first <= len(own) and not key.step:
                return own[start - first : stop - first]
            return self._all()[key]
        if first <= key < first + len(own):
            return own[key - first]
        return self._all()[key]


def node_text(node: Any) -> str:
    text = node.text
    return text.decode("utf-8", errors="replace") if text is not None else ""


def py_docstring(body: Any) -> str:
    """The string literal that opens a Python body (grammar versions differ in wrapping it)."""
    # named_child, not named_children: that would build a list of every statement
    first = body.named_child(0) if body.named_child_count else None
    if first is not None and first.type == "expression_statement" and first.named_child_count:
        first = first.named_child(0)
    if first is None or first.type != "string":
        return ""
    return strip_string(node_text(first))[:MAX_DOCSTRING]


def strip_string(s: str) -> str:
    s = s.lstrip("rRbBuUfF")
    for q in ('"""', "'''", '"', "'"):
        if s.startswith(q) and s.endswith(q) and len(s) >= 2 * len(q):
            return s[len(q) : -len(q)].strip()
    return s.strip()
