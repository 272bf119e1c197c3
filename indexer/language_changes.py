"""Which files an existing index must re-parse when the languages Kiln knows change.

A new grammar (``.cs`` files, once chunked as text windows, now with classes and methods), a
new extension for a known one, or a changed query (``queries/<lang>.scm``) changes the blocks
of that language's files only. Bumping ``schema.CHUNKER_VERSION`` would re-parse every file
of every index; instead the index records a digest per language (its query and extensions)
and, when they differ from this Kiln's, marks for re-parsing the files whose language changed
(stored as one, ``language_for`` now says another) or whose query changed. Their rows stay
searchable until the next update replaces them, like any file changed on disk.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from functools import cache
from importlib import resources

from indexer.languages import EXTENSIONS, language_for

META_KEY = "languages"


@cache
def digests() -> dict[str, str]:
    """Per language: a digest of its query and the extensions mapped to it."""
    out: dict[str, str] = {}
    for language in sorted(set(EXTENSIONS.values())):
        h = hashlib.sha256()
        h.update(resources.files("indexer").joinpath("queries", f"{language}.scm").read_bytes())
        h.update(" ".join(sorted(e for e, lang in EXTENSIONS.items() if lang == language)).encode())
        out[language] = h.hexdigest()[:16]
    return out


def record(conn: sqlite3.Connection) -> None:
    """Store this Kiln's digests (after a full re-parse, or once the changed files are marked)."""
    conn.execute(
        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
        (META_KEY, json.dumps(digests(), sort_keys=True)),
    )


def stale(conn: sqlite3.Connection) -> dict[str, str] | None:
    """The digests an index recorded, or None when they are this Kiln's (nothing to do)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
    try:
        recorded = json.loads(row[0]) if row is not None else {}
    except ValueError:
        recorded = {}
    if not isinstance(recorded, dict):
        recorded = {}
    return None if recorded == digests() else recorded


def mark(conn: sqlite3.Connection, recorded: dict[str, str]) -> int:
    """Mark for re-parsing the files whose language, or whose language's query, changed since
    ``recorded`` (empty: nothing was recorded); returns how many (the caller holds a write
    transaction)."""
    current = digests()
    # An index from before the digests were recorded was chunked by the queries of its
    # chunker version (a changed query bumped that version then): only new mappings matter.
    changed = {
        lang for lang in recorded.keys() | current.keys() if recorded.get(lang) != current.get(lang)
    }
    if not recorded:
        changed = set()
    ids = [
        file_id
        for file_id, path, language in conn.execute("SELECT id, path, language FROM files")
        if language in changed or (language != "skipped" and language_for(path) != language)
    ]
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        conn.execute(
            f"UPDATE files SET hash = '', mtime_ns = -1 WHERE id IN ({','.join('?' * len(chunk))})",
            chunk,
        )
    return len(ids)
