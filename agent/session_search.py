"""Finding past sessions: by workspace, and by the words of their transcripts.

The store keeps a full-text table (``session_text``) beside the messages. This module says what
of a message goes into it (the conversation's words and tool calls, not the context the harness
appended at the tail), how a query is read (each word matched as written, never as FTS5
syntax; any word may match), and the SQL that keeps the rows of one workspace or several.
``SessionStore.search`` and ``SessionStore.recent`` run what it builds.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.types import Message, canonical_json

Roots = Path | Sequence[Path] | None

HARNESS_TAGS = ("<agent_status>", "<environment>", "<memory", "<skills")


def root_filter(column: str, root: Roots) -> tuple[str, list[str]]:
    """SQL that keeps the rows of one workspace or several ('' for every workspace)."""
    if root is None:
        return "", []
    roots = [str(root)] if isinstance(root, Path) else [str(r) for r in root]
    return f"{column} IN ({', '.join('?' * len(roots))})", roots


def query_words(query: str) -> list[str]:
    """The words of a search query: compatibility forms folded (a full-width ``ＺＥＢＲＡ`` is
    ``ZEBRA``), the quotes, stars and brackets people wrap words in taken off."""
    text = unicodedata.normalize("NFKC", query)
    return [t for t in (w.strip("\"'*()^:-{}") for w in text.split()) if t]


def search_sql(query: str, root: Roots, limit: int) -> tuple[str, list[Any]]:
    """The search of ``query`` in ``root`` as SQL and its parameters ('' when the query has no
    words): each word an FTS5 string (its quotes doubled), the best ``limit`` excerpts first."""
    terms = query_words(query)
    if not terms:
        return "", []
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    sql = (
        "SELECT t.session_id, t.kind, snippet(session_text, 2, '[', ']', '…', 16) AS excerpt, "
        "s.created, s.title, s.root FROM session_text t JOIN sessions s ON s.id = t.session_id "
        "WHERE session_text MATCH ?"
    )
    params: list[Any] = [match]
    where, roots = root_filter("s.root", root)
    if where:
        sql += f" AND {where}"
        params.extend(roots)
    sql += " ORDER BY bm25(session_text) LIMIT ?"
    params.append(limit)
    return sql, params


def searchable_text(message: Message) -> str:
    """What of ``message`` the full-text table holds ('' for nothing)."""
    parts = []
    for block in message.get("content", []):
        if block.get("type") == "text":
            if not block["text"].startswith(HARNESS_TAGS):  # context the harness appended
                parts.append(block["text"])
        elif block.get("type") == "tool_use":
            parts.append(f"{block['name']} {canonical_json(block.get('input', {}))}")
        elif block.get("type") == "tool_result":
            content = block.get("content", "")
            parts.append(content[:2000] if isinstance(content, str) else "")
    return "\n".join(p for p in parts if p)
