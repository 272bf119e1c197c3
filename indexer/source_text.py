"""A file's bytes as the index reads them: UTF-8, its lines ended where an editor ends them.

The chunker, tree-sitter and every line number of the index count ``\\n``. LSP ends a line at
``\\n``, ``\\r\\n`` or a lone ``\\r`` (classic Mac OS), and ``kiln lsp`` counts a buffer's
lines that way (``lsp_server/lsp/textsync.py``): a file saved with ``\\r`` alone was one line
to the index, every block on line 1 (and one over 4 kB was skipped as minified). A lone ``\\r``
becomes ``\\n`` here (one byte for one: nothing else moves; ``\\r\\n`` stays as it is). A file
that starts with a byte-order mark says its encoding: UTF-16 (Windows tools write it) is
decoded and re-encoded as UTF-8, where it was skipped as binary for its NUL bytes; the UTF-8
mark is dropped. UTF-16 without a mark cannot be told from binary data and stays skipped
(``files.unindexable``).

Disk files and editor buffers go through the same function, so a buffer whose text equals the
file's has the file's hash and is not parsed again.
"""

from __future__ import annotations

import re

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF32_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")  # checked first: FF FE starts both
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_LONE_CR = re.compile(rb"\r(?!\n)")
# Bumped when this module reads a file differently: an index written before re-reads each file
# once (``schema.migrate``: the hash is checked, and only a file whose text changed is parsed).
RULES = "1"


def as_indexed(data: bytes) -> bytes:
    """``data`` (a file's bytes, or a buffer's UTF-8) as the index stores and counts it."""
    if data[:2] in _UTF16_BOMS or data[:3] == _UTF8_BOM:
        data = _decoded(data)
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        data = _LONE_CR.sub(b"\n", data)
    return data


def _decoded(data: bytes) -> bytes:
    if data[:3] == _UTF8_BOM:
        return data[3:]
    codec = "utf-32" if data[:4] in _UTF32_BOMS else "utf-16"  # each reads its own mark
    return data.decode(codec, errors="replace").encode("utf-8", errors="replace")
