"""The change arithmetic of `kiln lsp`'s synced buffers against a plain reading of LSP 3.17
(lines end at \\n, \\r\\n, \\r; past the end of a line is its end; past the last line is the end
of the text; a range given end first is read start first), on many small random buffers and
with chunk sizes small enough that every line break falls on a chunk boundary somewhere."""

from __future__ import annotations

import random
import re

import pytest
from lsprotocol import types

from lsp_server.lsp import textsync

_BREAK = re.compile(r"\r\n|\r|\n")


def _reference(text: str, start: tuple[int, int], end: tuple[int, int], new: str) -> str:
    starts = [0] + [m.end() for m in _BREAK.finditer(text)]

    def offset(line: int, character: int) -> int:
        if line >= len(starts):
            return len(text)
        brk = _BREAK.search(text, starts[line])
        stop = brk.start() if brk else len(text)
        return starts[line] + min(character, stop - starts[line])

    a, b = sorted((offset(*start), offset(*end)))
    return text[:a] + new + text[b:]


@pytest.mark.parametrize("chunk", [1, 2, 5, 1 << 16])
def test_changes_and_lines_match_the_reference(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(textsync, "_CHUNK", chunk)
    rng = random.Random(chunk)
    pieces = ["a", "bc", "\r", "\n", "\r\n", "\x0c", "\u2028", "\x85"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 24)))
        start, end = (rng.randint(0, 8), rng.randint(0, 6)), (rng.randint(0, 8), rng.randint(0, 6))
        span = types.Range(types.Position(*start), types.Position(*end))
        change = types.TextDocumentContentChangePartial(range=span, text="X")
        got = textsync.apply_change(text, change, "utf-32")
        assert got == _reference(text, start, end, "X"), (text, start, end)
        assert textsync.lsp_lines(text) == re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def test_a_column_inside_an_astral_character_is_its_start() -> None:
    text = "a😀b\n"  # 😀: 2 UTF-16 units, 4 UTF-8 bytes
    for encoding, inside, after in (("utf-16", 2, 3), ("utf-8", 3, 5)):
        for character, want in ((inside, "aX😀b\n"), (after, "a😀Xb\n")):
            span = types.Range(types.Position(0, character), types.Position(0, character))
            change = types.TextDocumentContentChangePartial(range=span, text="X")
            assert textsync.apply_change(text, change, encoding) == want, (encoding, character)
