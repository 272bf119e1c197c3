"""Whole-file edit proposals turned into LSP ``WorkspaceEdit``s the editor applies itself.

The agent computes the full new text; the editor wants ranges. We send the smallest single
replacement (common prefix and suffix trimmed) with positions counted in the negotiated
position encoding, since a column in UTF-16 code units differs from one in UTF-8 bytes or
code points as soon as a line holds non-ASCII text. Open documents get a versioned
``TextDocumentEdit`` (the editor refuses it if the buffer moved on); files the editor does not
hold get a null version, or a ``CreateFile`` first when they do not exist yet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
ANNOTATION_ID = "kiln.edit"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # LSP line ends only


def units(text: str, encoding: str) -> int:
    """Length of ``text`` in the code units of an LSP position encoding."""
    if encoding == UTF8:
        return len(text.encode("utf-8", errors="surrogatepass"))
    if encoding == UTF32:
        return len(text)
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def position_at(text: str, offset: int, encoding: str) -> dict[str, int]:
    """The LSP position of a code-point ``offset`` (lines end at \\n, \\r\\n or \\r)."""
    line = 0
    start = 0
    i = 0
    while i < offset:
        ch = text[i]
        if ch == "\n" or (ch == "\r" and not text.startswith("\n", i + 1)):
            line += 1
            start = i + 1
        i += 1
    return {"line": line, "character": units(text[start:offset], encoding)}


@dataclass(frozen=True)
class Replacement:
    start: dict[str, int]
    end: dict[str, int]
    new_text: str

    def to_lsp(self, annotation: str | None = None) -> dict[str, Any]:
        edit: dict[str, Any] = {
            "range": {"start": self.start, "end": self.end},
            "newText": self.new_text,
        }
        if annotation:
            edit["annotationId"] = annotation
        return edit


def minimal_replacement(old: str, new: str, encoding: str = UTF16) -> Replacement:
    """One replacement turning ``old`` into ``new``, trimmed to what actually changed."""
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    # Never split a \r\n pair: a range ending between them is ill-defined for the client.
    if prefix and old[prefix - 1 : prefix + 1] == "\r\n":
        prefix -= 1
    if suffix and old[len(old) - suffix - 1 : len(old) - suffix + 1] == "\r\n":
        suffix -= 1
    return Replacement(
        position_at(old, prefix, encoding),
        position_at(old, len(old) - suffix, encoding),
        new[prefix : len(new) - suffix],
    )


def apply_replacement(text: str, rep: Replacement, encoding: str = UTF16) -> str:
    """Apply an LSP replacement to ``text`` the way an editor does (used by tests and checks)."""
    start = offset_at(text, rep.start, encoding)
    end = offset_at(text, rep.end, encoding)
    return text[:start] + rep.new_text + text[end:]


def offset_at(text: str, position: dict[str, int], encoding: str) -> int:
    lines = _LINE.findall(text)
    if position["line"] >= len(lines):
        return len(text)
    base = sum(len(x) for x in lines[: position["line"]])
    line = lines[position["line"]]
    count = 0
    for i, ch in enumerate(line):
        if count >= position["character"] or ch in "\r\n":
            return base + i
        count += units(ch, encoding)
    return base + len(line)


def workspace_edit(
    uri: str,
    old: str,
    new: str,
    *,
    encoding: str,
    version: int | None,
    exists: bool,
    document_changes: bool,
    create_supported: bool,
    annotation: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The ``WorkspaceEdit`` for one file, or None when the client cannot create the file.

    ``annotation`` (``{"label", "needsConfirmation", "description"}``) is attached only when the
    caller knows the client supports change annotations.
    """
    rep = minimal_replacement(old if exists else "", new, encoding)
    annotation_id = ANNOTATION_ID if annotation else None
    text_edit = rep.to_lsp(annotation_id)
    result: dict[str, Any]
    if not exists and not (document_changes and create_supported):
        return None
    if document_changes:
        ops: list[dict[str, Any]] = []
        if not exists:
            create: dict[str, Any] = {
                "kind": "create",
                "uri": uri,
                "options": {"ignoreIfExists": True},
            }
            if annotation_id:
                create["annotationId"] = annotation_id
            ops.append(create)
        ops.append({"textDocument": {"uri": uri, "version": version}, "edits": [text_edit]})
        result = {"documentChanges": ops}
    else:
        result = {"changes": {uri: [text_edit]}}
    if annotation:
        result["changeAnnotations"] = {ANNOTATION_ID: annotation}
    return result
