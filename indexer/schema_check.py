"""Whether an index file's schema is the one this Kiln makes. A checkout can ship
``.kiln/index.db``, and SQLite runs what a schema says on every write: a trigger on ``files``
with an endless recursive query held `kiln index`, the editor's indexing and `search_code`
forever (a C loop: not even SIGTERM stopped it); an index on an expression would run one on
each row. So every trigger and view in the file must be exactly one this Kiln creates, and an
index on Kiln's tables may hold columns only; anything else and the file is set aside and
rebuilt like a damaged one. Tables are left to the shape checks (a newer Kiln's extra ones
stay); a table ``CHECK`` constraint is not inspected."""

from __future__ import annotations

import sqlite3
from functools import cache

_OBJECTS = "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL"


@cache
def _expected() -> tuple[frozenset[tuple[str, str, str]], frozenset[str]]:
    """(type, name, sql) of every object a fresh index holds, and the names of its tables."""
    from indexer import schema

    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        schema.migrate(conn)
        rows = conn.execute(_OBJECTS).fetchall()
    finally:
        conn.close()
    return (
        frozenset((kind, name, sql) for kind, name, _, sql in rows),
        frozenset(name for kind, name, _, _ in rows if kind == "table"),
    )


def strange_objects(conn: sqlite3.Connection) -> list[str]:
    """``"trigger evil"``… for each object of ``conn``'s schema that runs something on a write
    and that this Kiln would not have made."""
    objects, kiln_tables = _expected()
    strange = []
    for kind, name, table, sql in conn.execute(_OBJECTS).fetchall():
        if (kind, name, sql) in objects:
            continue
        if kind == "index":  # spelled as an older Kiln did, or the migrations' way: columns only
            if table in kiln_tables and _computes(conn, table, name):
                strange.append(f"index {name}")
        elif kind in ("trigger", "view"):
            strange.append(f"{kind} {name}")
    return strange


def _computes(conn: sqlite3.Connection, table: str, index: str) -> bool:
    """Whether an index evaluates an expression on each row written (on an expression, or
    partial with a ``WHERE``); an index of plain columns runs nothing."""
    columns = conn.execute("SELECT cid FROM pragma_index_xinfo(?)", (index,)).fetchall()
    partial = conn.execute(
        "SELECT partial FROM pragma_index_list(?) WHERE name = ?", (table, index)
    ).fetchone()
    return any(cid == -2 for (cid,) in columns) or bool(partial and partial[0])
