"""The one base class of Kiln's errors, in a leaf every package may import.

``indexer``, ``skills_registry``, ``agent`` and ``lsp_server`` each keep their own table of
subclasses; what they share is this shape: a message, a user-facing ``hint``, a ``retryable``
flag and the ``exit_code`` the CLI exits with. Front-ends map errors to protocol codes with
``isinstance`` against these classes (never by comparing class names).

The leaf also holds ``sqlite_common``: how every shared SQLite file is opened and migrated, and
``settled_imports``: how a large module is imported once (the garbage collector paused).
"""

from __future__ import annotations

__all__ = ["KilnError"]


class KilnError(Exception):
    hint: str = ""
    retryable: bool = False
    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint
