"""Open documents held as the editor holds them: LSP text synchronisation by the spec's rules.

pygls splits a document with ``str.splitlines``, which also ends a line at a form feed, ``\\x85``,
``\\u2028`` and a few more (LSP lines end only at ``\\n``, ``\\r\\n`` and ``\\r``), so an incremental
change in a buffer holding one landed on the wrong line; it read a column past the end of a line
as one past its line break (the break was eaten), and on a last line as one before its end.
Here a position is read as LSP 3.17 says and as ``vscode-languageserver-textdocument`` reads
it: a line past the end is the end of the document, a character past the end of a line is the
end of that line (before its break), a character inside a UTF-16 surrogate pair or a UTF-8
sequence is the start of that character, and a range given end first is read start first.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace
from pygls.workspace.text_document import RE_END_WORD, RE_START_WORD

log = logging.getLogger("kiln.lsp.textsync")
_BREAK = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


_CHUNK = 1 << 12
_LINES_UP = 64  # farther up than this, count from the top


def lsp_lines(text: str) -> list[str]:
    """The lines of ``text`` with their breaks, split only where LSP ends a line."""
    odd = "\x0b\x0c\x1c\x1d\x1e" if text.isascii() else "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    if not any(c in text for c in odd):
        return text.splitlines(True)  # the same lines, split in C (a 20 MB buffer is common)
    return _LINE.findall(text)


def _breaks(text: str, start: int, end: int) -> int:
    n = text.count("\n", start, end)
    if text.find("\r", start, end) < 0:  # the usual case, found by memchr: one count, not three
        return n
    return n + text.count("\r", start, end) - text.count("\r\n", start, end)


def line_start(text: str, line: int, pos: int = 0) -> int | None:
    """The offset where ``line`` (0-based, counted from the line starting at ``pos``) starts;
    None past the end. Breaks are counted a chunk at a time in C, then found one by one only
    in the chunk that holds the line."""
    if line <= 0:
        return pos
    start, seen, size = pos, 0, len(text)
    while start < size:
        end = min(start + _CHUNK, size)
        if text[end - 1 : end + 1] == "\r\n":
            end += 1  # never split a CRLF between chunks
        n = _breaks(text, start, end)
        if seen + n >= line:
            for brk in _BREAK.finditer(text, start, end):
                seen += 1
                if seen == line:
                    return brk.end()
        seen += n
        start = end
    return None


def _line_above(text: str, start: int) -> int:
    """The start of the line above the one starting at ``start`` (> 0)."""
    brk = start - 2 if start >= 2 and text.startswith("\r\n", start - 2) else start - 1
    return max(text.rfind("\n", 0, brk), text.rfind("\r", 0, brk)) + 1


def line_start_near(text: str, line: int, known: tuple[int, int]) -> int | None:
    """``line_start(text, line)``, counted from a line whose start is ``known`` (line, offset):
    typing changes the lines around the last change, so the count is as long as the step from
    there, not as the text above (~1 ms per change near the end of a 300 kB module)."""
    known_line, offset = known
    if line >= known_line:
        return line_start(text, line - known_line, offset)
    if line <= known_line - line:  # nearer the top
        return line_start(text, line)
    if "\r" not in text:  # the usual case, found by memchr: count back from there
        return _lines_up(text, offset, known_line - line)
    if known_line - line > _LINES_UP:
        return line_start(text, line)
    for _ in range(known_line - line):
        offset = _line_above(text, offset)
    return offset


def _lines_up(text: str, start: int, count: int) -> int:
    """The start of the line ``count`` lines above the one starting at ``start``, in a text
    whose lines end at \n alone: after the (count + 1)th \n before ``start``, found counting
    back a chunk at a time."""
    need, end = count + 1, start
    while end > 0:
        low = max(0, end - _CHUNK)
        n = text.count("\n", low, end)
        if n >= need:
            for _ in range(need):
                end = text.rfind("\n", low, end)
            return end + 1
        need -= n
        end = low
    return 0


def _units(char: str, encoding: str) -> int:
    if encoding == types.PositionEncodingKind.Utf8:
        return len(char.encode("utf-8", errors="surrogatepass"))
    if encoding == types.PositionEncodingKind.Utf32:
        return 1
    return 2 if ord(char) > 0xFFFF else 1


def _column(content: str, character: int, encoding: str) -> int:
    """Code points of ``content`` (one line, no break) before ``character`` code units."""
    if character <= 0:
        return 0
    if encoding == types.PositionEncodingKind.Utf32 or content.isascii():
        return min(character, len(content))
    used = 0
    for n, char in enumerate(content):
        used += _units(char, encoding)
        if used > character:  # the position falls inside this character: its start
            return n
    return len(content)


def _offset(text: str, start: int | None, character: int, encoding: str) -> int:
    """The offset of ``character`` in the line starting at ``start`` (None: past the end)."""
    if start is None:
        return len(text)  # a line past the end: the end of the document
    brk = _BREAK.search(text, start)
    return start + _column(text[start : brk.start() if brk else len(text)], character, encoding)


def offset_at(text: str, line: int, character: int, encoding: str) -> int:
    """The code-point offset in ``text`` of an LSP position counted in ``encoding`` units."""
    return _offset(text, line_start(text, line), character, encoding)


def apply_change(text: str, change: Any, encoding: str) -> str:
    """``text`` after one ``TextDocumentContentChangeEvent`` (a whole text or a range)."""
    return changed(text, change, encoding, (0, 0))[0]


def changed(
    text: str, change: Any, encoding: str, known: tuple[int, int]
) -> tuple[str, tuple[int, int]]:
    """``apply_change`` with a line whose start is ``known`` in ``text`` (see
    ``line_start_near``); also returns such a line of the new text, for the next change."""
    span = getattr(change, "range", None)
    if span is None:
        return str(change.text), (0, 0)
    first = line_start_near(text, span.start.line, known)
    if first is not None and span.end.line >= span.start.line:  # count on from the start
        last = line_start(text, span.end.line - span.start.line, first)
    else:
        last = line_start_near(text, span.end.line, known)
    start = _offset(text, first, span.start.character, encoding)
    end = _offset(text, last, span.end.character, encoding)
    # The change starts on the upper of the two lines, at or after its start: that start
    # stays, unless a lone \r above it meets a \n the change brings (one break now).
    line, at = min((span.start.line, first), (span.end.line, last), key=lambda x: x[0])
    if end < start:
        start, end = end, start
    text = text[:start] + change.text + text[end:]
    if at is None or (at and text[at - 1] == "\r" and text.startswith("\n", at)):
        return text, (0, 0)
    return text, (line, at)


class SyncedDocument(TextDocument):
    """pygls's document with LSP lines and LSP positions for the changes it applies."""

    @property
    def lines(self) -> Sequence[str]:
        return tuple(lsp_lines(self.source))

    @property
    def encoding(self) -> str:
        return str(self.position_codec.encoding or types.PositionEncodingKind.Utf16)

    # A line whose start is known in ``_source`` (the one the last change began on), kept with
    # the text it holds for: a whole-text change or a new document starts from the top again.
    _known: tuple[str, tuple[int, int]] = ("", (0, 0))

    def _line_start(self, text: str, line: int) -> int | None:
        held, known = self._known
        return line_start_near(text, line, known if held is text else (0, 0))

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        held, known = self._known
        text = self.source
        self._source, known = changed(
            text, change, self.encoding, known if held is text else (0, 0)
        )
        self._known = (self._source, known)

    def word_at_position(
        self,
        client_position: types.Position,
        re_start_word: re.Pattern[str] = RE_START_WORD,
        re_end_word: re.Pattern[str] = RE_END_WORD,
    ) -> str:
        """pygls's word under the cursor, without splitting the whole document into lines."""
        text = self.source
        start = self._line_start(text, client_position.line)
        if start is None:
            return ""
        brk = _BREAK.search(text, start)
        line = text[start : brk.start() if brk else len(text)]
        col = _column(line, client_position.character, self.encoding)
        return str(re_start_word.findall(line[:col])[0] + re_end_word.findall(line[col:])[-1])


class SyncedWorkspace(Workspace):
    """pygls's workspace whose documents are ``SyncedDocument``s. A change to a document never
    opened is dropped with one log line per document (pygls raised a ``KeyError`` for each,
    a warning in the editor's log per keystroke of a client that skipped ``didOpen``)."""

    unopened: set[str] | None = None

    @classmethod
    def replacing(cls, workspace: Workspace) -> SyncedWorkspace:
        """A new workspace like ``workspace`` (made by pygls at ``initialize``, still empty)."""
        return cls(
            workspace.root_uri,
            types.TextDocumentSyncKind.Incremental,  # what the server advertises
            list(workspace.folders.values()),
            workspace.position_encoding or types.PositionEncodingKind.Utf16,
        )

    def update_text_document(
        self,
        text_doc: types.VersionedTextDocumentIdentifier,
        change: types.TextDocumentContentChangeEvent,
    ) -> None:
        if unquote(text_doc.uri) in self.text_documents:
            super().update_text_document(text_doc, change)
            return
        if self.unopened is None or len(self.unopened) > 1000:
            self.unopened = set()
        if text_doc.uri not in self.unopened:
            self.unopened.add(text_doc.uri)
            log.info("ignored changes to %s: it was not opened (send didOpen first)", text_doc.uri)

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return SyncedDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=types.TextDocumentSyncKind.Incremental,
            position_codec=self.position_codec,
        )
