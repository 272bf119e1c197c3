"""Reading a settings or ``mcp.json`` file a repository may ship, without letting it hang Kiln.

Git can check out a link to ``/dev/zero`` (read forever) and a command can leave a FIFO (an
``open()`` that never returns) at ``.kiln/settings.json``; a document nested a few thousand levels
deep overflows the parser. Each is an ``OSError`` or ``ValueError`` here, which every reader
already turns into its one-line refusal or warning.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from skills_registry import json_limits

MAX_BYTES = 1 << 20  # far beyond any real settings file


def read_text(path: Path) -> str:
    """A regular file's text, at most ``MAX_BYTES`` (``FileNotFoundError`` when absent)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file")
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise OSError(0, f"larger than {MAX_BYTES // 2**20} MB")
    return data.decode("utf-8")


def load_json(path: Path) -> Any:
    """The JSON document in ``path``; ``ValueError`` for bad or too deeply nested JSON."""
    return json_limits.loads(read_text(path))
