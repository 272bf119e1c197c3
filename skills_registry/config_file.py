"""Reading a settings or ``mcp.json`` file a repository may ship, without letting it hang Kiln.

Git can check out a link to ``/dev/zero`` (read forever) and a command can leave a FIFO (an
``open()`` that never returns) at ``.kiln/settings.json``; a document nested a few thousand levels
deep overflows the parser; a key given twice in one object is read one way by Kiln and another
by a reviewer's tool. Each is an ``OSError`` or ``ValueError`` here, which every reader
already turns into its one-line refusal or warning.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from skills_registry import json_limits

MAX_BYTES = 1 << 20  # far beyond any real settings file


def read_text(path: Path, max_bytes: int = MAX_BYTES) -> str:
    """A regular file's text, at most ``max_bytes`` (``FileNotFoundError`` when absent)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(0, f"larger than {max_bytes // 2**20} MB")
    return data.decode("utf-8")


def unreadable(path: Path, exc: OSError) -> str:
    """Why ``path`` could not be read, in words: "Not a directory" means a file stands where
    one of its folders belongs (``KILN_HOME`` itself, or a repository's ``.kiln``), so name it."""
    if isinstance(exc, NotADirectoryError):
        for folder in reversed(path.parents):
            if folder.exists() and not folder.is_dir():
                return f"{folder} is a file, not a folder"
    return exc.strerror or str(exc)


def load_json(path: Path, max_bytes: int = MAX_BYTES) -> Any:
    """The JSON document in ``path``; ``ValueError`` for bad or too deeply nested JSON, and for
    a key given twice in one object (parsers disagree on which one wins: a reader of the file
    must not see another setting than Kiln applies)."""
    return json_limits.loads(read_text(path, max_bytes), object_pairs_hook=_unique_keys)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key!r} appears twice in one object")
        found[key] = value
    return found
