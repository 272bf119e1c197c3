"""Which files an existing index must re-parse when the languages Kiln knows change.

A new grammar (``.cs`` files, once chunked as text windows, now with classes and methods), a
new extension for a known one, or a changed query (``queries/<lang>.scm``) changes the blocks
of that language's files only. Bumping ``schema.CHUNKER_VERSION`` would re-parse every file
of every index; instead the index records a digest per language (its query and extensions)
and, when they differ from this Kiln's, marks for re-parsing the files whose language changed
(stored as one, ``language_for`` now says another) or whose query changed, and the files
whose content tells their language (no extension: a ``#!`` line; ``.m``: Objective-C or
MATLAB) when what they could turn out to be changed (such a file's row, like its blocks,
says the language its content names; an index from before rows did says "text": ``ROWS``
is in the digest so that it reads them again). Their rows stay searchable until the next
update replaces them, like any file changed on disk.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from functools import cache
from importlib import resources
from pathlib import PurePosixPath

from indexer import components
from indexer.languages import (
    COMPONENT_LANGUAGES,
    EXTENSIONS,
    INTERPRETERS,
    SNIFFED,
    language_for,
)

META_KEY = "languages"
SHEBANG_KEY = "#!"  # the digest of the sniffed files' table, beside the languages'
ROWS = "rows=content"  # a sniffed file's row records its content's language, not "text"


@cache
def digests() -> dict[str, str]:
    """Per language: a digest of its query and the extensions mapped to it (a component
    language: the script grammars' queries and ``components.VERSION``)."""
    out: dict[str, str] = {}
    for language in sorted(set(EXTENSIONS.values())):
        h = hashlib.sha256()
        queries = [language]
        if language in COMPONENT_LANGUAGES:
            queries = list(components.SCRIPT_LANGUAGES)
            h.update(f"component {components.VERSION}".encode())
        for query in queries:
            h.update(resources.files("indexer").joinpath("queries", f"{query}.scm").read_bytes())
        h.update(" ".join(sorted(e for e, lang in EXTENSIONS.items() if lang == language)).encode())
        out[language] = h.hexdigest()[:16]
    # scripts without an extension, by their #! line (``languages.language_of``)
    sniffed = [ROWS] + [f"{k}={v}" for k, v in sorted(INTERPRETERS.items())]
    sniffed += [f"{suffix}:{','.join(sorted(langs))}" for suffix, langs in sorted(SNIFFED.items())]
    table = " ".join(sniffed).encode()
    out[SHEBANG_KEY] = hashlib.sha256(table).hexdigest()[:16]
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
    except (TypeError, ValueError, RecursionError):  # another program's value: nothing known
        recorded = {}
    if not isinstance(recorded, dict):
        recorded = {}
    return None if recorded == digests() else recorded


def _moved(path: str, language: str, again: set[str], sniff: bool) -> bool:
    """Whether a file stored as ``language`` may be another now: its extension names another,
    or its content tells it and what it can tell changed (``sniff``: the table of
    interpreters; ``again``: the suffixes one of whose possible languages changed, which a
    file stored as "text" may now be)."""
    if language == "skipped":
        return False
    suffix = PurePosixPath(path).suffix
    if suffix in SNIFFED and language_for(path) == "text":
        if language == "text":
            return suffix in again
        return sniff or language not in SNIFFED[suffix]
    return language_for(path) != language


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
    # files whose content tells their language (no extension, .m) are read again when it
    # could now mean another grammar
    sniff = recorded.get(SHEBANG_KEY) != current[SHEBANG_KEY]
    again = {s for s, langs in SNIFFED.items() if sniff or changed & langs}
    ids = [
        file_id
        for file_id, path, language in conn.execute("SELECT id, path, language FROM files")
        if language in changed or _moved(path, language, again, sniff)
    ]
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        conn.execute(
            f"UPDATE files SET hash = '', mtime_ns = -1 WHERE id IN ({','.join('?' * len(chunk))})",
            chunk,
        )
    return len(ids)
