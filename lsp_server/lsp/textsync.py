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

import re
from collections.abc import Sequence
from itertools import islice
from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace

_BREAK = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def lsp_lines(text: str) -> list[str]:
    """The lines of ``text`` with their breaks, split only where LSP ends a line."""
    return _LINE.findall(text)


def _units(char: str, encoding: str) -> int:
    if encoding == types.PositionEncodingKind.Utf8:
        return len(char.encode("utf-8", errors="surrogatepass"))
    if encoding == types.PositionEncodingKind.Utf32:
        return 1
    return 2 if ord(char) > 0xFFFF else 1


def offset_at(text: str, line: int, character: int, encoding: str) -> int:
    """The code-point offset in ``text`` of an LSP position counted in ``encoding`` units."""
    if line < 0:
        return 0
    start = 0
    if line:
        passed = list(islice(_BREAK.finditer(text), line - 1, line))
        if not passed:
            return len(text)  # a line past the end: the end of the document
        start = passed[0].end()
    brk = _BREAK.search(text, start)
    content = text[start : brk.start() if brk else len(text)]
    if character <= 0:
        return start
    if content.isascii() or encoding == types.PositionEncodingKind.Utf32:
        return start + min(character, len(content))
    used = 0
    for n, char in enumerate(content):
        used += _units(char, encoding)
        if used > character:  # the position falls inside this character: its start
            return start + n
    return start + len(content)


def apply_change(text: str, change: Any, encoding: str) -> str:
    """``text`` after one ``TextDocumentContentChangeEvent`` (a whole text or a range)."""
    span = getattr(change, "range", None)
    if span is None:
        return str(change.text)
    start = offset_at(text, span.start.line, span.start.character, encoding)
    end = offset_at(text, span.end.line, span.end.character, encoding)
    if end < start:
        start, end = end, start
    return text[:start] + change.text + text[end:]


class SyncedDocument(TextDocument):
    """pygls's document with LSP lines and LSP positions for the changes it applies."""

    @property
    def lines(self) -> Sequence[str]:
        return tuple(lsp_lines(self.source))

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        encoding = str(self.position_codec.encoding or types.PositionEncodingKind.Utf16)
        self._source = apply_change(self.source, change, encoding)


class SyncedWorkspace(Workspace):
    """pygls's workspace whose documents are ``SyncedDocument``s."""

    @classmethod
    def replacing(cls, workspace: Workspace) -> SyncedWorkspace:
        """A new workspace like ``workspace`` (made by pygls at ``initialize``, still empty)."""
        return cls(
            workspace.root_uri,
            types.TextDocumentSyncKind.Incremental,  # what the server advertises
            list(workspace.folders.values()),
            workspace.position_encoding or types.PositionEncodingKind.Utf16,
        )

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
