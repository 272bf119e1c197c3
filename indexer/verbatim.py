"""Blocks that hold one of the query's identifiers verbatim, when only a few do.

A query that spells out an identifier (``kiln_typed_16_8546``, ``parseHTTPResponse``,
``http2``) and finds it in one or two blocks asks for those blocks, the way a grep would: the
fused ranking alone can put them below blocks matching the identifier's common parts (a test
file's penalty, history votes for other files), so ``ranking.search`` multiplies their score
by ``weights.VERBATIM_WEIGHT``. Plain words (``request``) never count: only words whose shape
makes them names (an inner ``_``, a capital after a lower-case letter, letters and digits).
"""

from __future__ import annotations

import sqlite3

from indexer import weights as W
from indexer.tokens import fts_match


def identifier_shaped(word: str) -> bool:
    """``snake_case``, ``camelCase``/``PascalCase``, or letters with digits; not a plain word."""
    core = word.strip("_")
    if len(core) < 4:
        return False
    if "_" in core:
        return True
    has_digit = any(c.isdigit() for c in core)
    has_alpha = any(c.isalpha() for c in core)
    if has_digit and has_alpha:
        return True
    return any(c.isupper() for c in core[1:]) and any(c.islower() for c in core)


def verbatim_blocks(conn: sqlite3.Connection, words: list[str]) -> set[int]:
    """Ids of the blocks holding an identifier-shaped word of ``words`` as a phrase, for each
    such word found in at most ``VERBATIM_MAX_BLOCKS`` blocks (one bounded lookup per word)."""
    found: set[int] = set()
    limit = W.VERBATIM_MAX_BLOCKS
    for word in dict.fromkeys(w for w in words if identifier_shaped(w)):
        rows = conn.execute(
            "SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH ? LIMIT ?",
            (fts_match([word.lower()]), limit + 1),
        ).fetchall()
        if 0 < len(rows) <= limit:
            found.update(row[0] for row in rows)
    return found
