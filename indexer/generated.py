"""Whether a file says a code generator wrote it, decided when its rows are written and kept
as a flag on its ``files`` row (``files.generated``), so a search reads one column instead of
finding each candidate file's block at line 1 (``block_lines`` has no index on the line: that
walked every block of the file, and an edited file is new to any answer kept by content hash,
so every keystroke on a large module paid for it again: bench/README.md, "Edits, ninth pass").

The rule is the one the search applied to the stored rows before the flag: a block starting at
line 1 whose first 300 characters, as SQLite's ``substr`` gives them (up to a NUL), say
"generated file", "@generated", "do not edit" or "auto-generated". ``store`` writes the flag
with every write of a file's rows; ``schema.m009_files_generated`` fills it in for an index
made before it.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable

# What a code generator writes at the top of its output ("Generated file, do not edit by
# hand", "@generated", Go's "Code generated ... DO NOT EDIT.").
_GENERATED = re.compile(r"generated file|@generated|do not edit|auto-?generated", re.IGNORECASE)
HEAD_CHARS = 300  # of a block at line 1: where a header says it

# A file's blocks at line 1, their first characters as the search used to read them.
_HEADS = (
    f"SELECT substr(r.text, 1, {HEAD_CHARS}) FROM block_rows r"
    " JOIN block_lines l ON l.id = r.id WHERE r.file_id = ? AND l.start_line = 1"
)


def says_generated(head: str) -> bool:
    """Whether the start of a block at line 1 says a generator wrote the file."""
    return bool(_GENERATED.search(head))


def of_texts(first: Iterable[str]) -> bool:
    """The flag of a file whose blocks at line 1 have the texts ``first``: what ``_HEADS``
    and ``says_generated`` give once they are stored (SQLite's ``substr`` stops at a NUL)."""
    for text in first:
        head = text[:HEAD_CHARS]
        if "\0" in head:
            head = head[: head.index("\0")]
        if says_generated(head):
            return True
    return False


def recount(conn: sqlite3.Connection, file_id: int) -> bool:
    """The flag of a file from its stored rows."""
    return any(says_generated(head) for (head,) in conn.execute(_HEADS, (file_id,)))


def backfill(conn: sqlite3.Connection) -> None:
    """Set the flag of every file whose stored rows say so (the flag's migration step)."""
    says = {
        file_id
        for file_id, head in conn.execute(
            f"SELECT r.file_id, substr(r.text, 1, {HEAD_CHARS}) FROM block_rows r"
            " JOIN block_lines l ON l.id = r.id WHERE l.start_line = 1"
        )
        if says_generated(head)
    }
    conn.executemany("UPDATE files SET generated = 1 WHERE id = ?", [(i,) for i in sorted(says)])
