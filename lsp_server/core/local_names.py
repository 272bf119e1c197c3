"""Which local file or folder a name from a client stands for, and, when it stands for none, one
line saying why.

Clients send paths and ``file:`` URIs (a session's ``cwd``, a prompt's references, the
workspace root). Some name nothing on this machine and can name nothing: a NUL byte, a component
past the file system's 255 bytes, a path past 4,096, escapes that are not UTF-8, another host.
Asked of the file system, they raised ``ValueError`` or ``OSError`` (ENAMETOOLONG) deep in a
handler, an internal error; decoded with replacement characters or read without the host, they
named a different file. Here they are told apart before any system call.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from kiln_errors.shown import shown

NAME_MAX = 255  # bytes in one path component (Linux, macOS, Windows file systems)
PATH_MAX = 4096  # bytes in a whole path the kernel takes


def name_problem(path: str | Path) -> str | None:
    """Why ``path`` can name no file here (a NUL, a component past 255 bytes, a path past
    4,096), or None."""
    text = os.fspath(path)
    if "\x00" in text:
        return "it holds a NUL character"
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) >= PATH_MAX:
        return f"it is longer than {PATH_MAX:,} bytes"
    if any(len(part) > NAME_MAX for part in raw.split(b"/")):
        return f"a name in it is longer than {NAME_MAX} bytes"
    return None


def uri_problem(uri: str) -> str | None:
    """Why a ``file:`` URI names no file on this machine (escapes that are not UTF-8, a NUL,
    another host, a name the file system cannot hold), or None. Not for other schemes."""
    try:
        parts = urlsplit(uri)
        path = unquote(parts.path, errors="strict")
    except (ValueError, UnicodeDecodeError):  # a bracketed host urlsplit cannot read
        return "its escapes are not UTF-8 text" if "%" in uri else "it is not a valid URI"
    host = parts.netloc.rpartition("@")[2]
    if host.lower() not in ("", "localhost"):
        return f"it names the host {shown(host, 60)}, not this machine"
    return name_problem(path)


def is_file_uri(uri: str) -> bool:
    """Whether ``uri`` is a ``file:`` URI, in any case (``FILE:///x`` too: RFC 3986 makes a
    scheme case-insensitive, and read as another scheme it named no file)."""
    return uri[:5].lower() == "file:"


def uri_to_path(uri: str) -> Path | None:
    """The local path of a ``file:`` URI; None for any other scheme and for a URI that names no
    file here (``uri_problem``): decoding it with replacement characters, or dropping its
    host, would name another file."""
    if not is_file_uri(uri) or uri_problem(uri) is not None:
        return None
    return Path(unquote(urlsplit(uri).path))
