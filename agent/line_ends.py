"""A file's line-end style, kept when a tool rewrites it.

Models write ``\\n``; a Windows file keeps its ``\\r\\n`` whether it is edited in place or
written whole, so a one-line change does not rewrite every line of the file.
"""

from __future__ import annotations


def uses_crlf(text: str) -> bool:
    """True when most of the text's line ends are ``\\r\\n``."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf * 2 > text.count("\n")


def like(existing: str, new: str) -> str:
    """``new`` with the line ends of ``existing``: bare ``\\n`` become ``\\r\\n`` in a file
    that uses them. Text that already carries a ``\\r`` is the writer's choice and kept."""
    if "\r" in new or "\n" not in new or not uses_crlf(existing):
        return new
    return new.replace("\n", "\r\n")
