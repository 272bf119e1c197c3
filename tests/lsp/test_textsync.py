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


@pytest.mark.parametrize("chunk", [1, 2, 5, 1 << 12])
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


@pytest.mark.parametrize("breaks", [["\r", "\r\n", "\r\n", "\n", "\n"], ["\n"]])
@pytest.mark.parametrize("chunk", [1, 3, 1 << 12])
def test_a_buffer_changed_again_and_again_matches_the_reference(
    monkeypatch: pytest.MonkeyPatch, chunk: int, breaks: list[str]
) -> None:
    """A document counts each change's lines from the line the last change began on (up or
    down from it, or from the top when that is nearer; up by chunks when no line ends at \r):
    long runs of changes, ranges given end first, lines past the end and whole-text changes
    between them, against the reference."""
    monkeypatch.setattr(textsync, "_CHUNK", chunk)
    monkeypatch.setattr(textsync, "_LINES_UP", 3)  # both ways up are taken
    rng = random.Random(chunk)
    pieces = ["a", "bc", *breaks, "\x0c", "\u2028"]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        doc = textsync.SyncedDocument("file:///t.py", source=text)
        line = 0
        for _ in range(25):
            new = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 3)))
            if rng.random() < 0.05:
                doc.apply_change(types.TextDocumentContentChangeWholeDocument(text=new))
                text = new
                continue
            line = max(0, line + rng.randint(-6, 6))
            start = (line, rng.randint(0, 4))
            end = (max(0, line + rng.randint(-2, 3)), rng.randint(0, 4))
            span = types.Range(types.Position(*start), types.Position(*end))
            doc.apply_change(types.TextDocumentContentChangePartial(range=span, text=new))
            text = _reference(text, start, end, new)
            assert doc.source == text, (start, end, new)
            word = doc.word_at_position(types.Position(*end))
            assert word in text, word


def test_a_column_inside_an_astral_character_is_its_start() -> None:
    text = "a😀b\n"  # 😀: 2 UTF-16 units, 4 UTF-8 bytes
    for encoding, inside, after in (("utf-16", 2, 3), ("utf-8", 3, 5)):
        for character, want in ((inside, "aX😀b\n"), (after, "a😀Xb\n")):
            span = types.Range(types.Position(0, character), types.Position(0, character))
            change = types.TextDocumentContentChangePartial(range=span, text="X")
            assert textsync.apply_change(text, change, encoding) == want, (encoding, character)
