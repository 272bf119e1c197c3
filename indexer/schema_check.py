"""Whether an index file's schema is the one this Kiln makes. A checkout can ship
``.kiln/index.db``, and SQLite runs what a schema says on every write: a trigger on ``files``
with an endless recursive query held `kiln index`, the editor's indexing and `search_code`
forever (a C loop: not even SIGTERM stopped it); an index on an expression would run one on
each row. So every trigger and view in the file must be exactly one this Kiln creates, and an
index on Kiln's tables may hold columns only; anything else and the file is set aside and
rebuilt like a damaged one. A table Kiln writes may not compute either: a ``CHECK`` constraint
(``CHECK (path NOT LIKE '%new%')`` failed every later `kiln index` with "CHECK constraint
failed"), a generated column or a ``DEFAULT (expression)`` each run on every row written. Nor
may the file hold the statistics ``ANALYZE`` writes (``sqlite_stat1``…), which Kiln never runs:
SQLite plans every query by them, and planted ones turned its index lookups into full scans (on
58,800 blocks, a search took 1-1.8 s instead of 22-40 ms, an edit 10-20x as long). Other tables
are left to the shape checks (a newer Kiln's extra ones stay). A file with tables but no record
of Kiln's index migrations is another application's database (or one made to look like an
index): migrating it would add Kiln's tables beside its own, so it is set aside too."""

from __future__ import annotations

import re
import sqlite3
from functools import cache

_OBJECTS = "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL"
# What a table's SQL can say that runs on each row written, once quoted text is taken out:
# a CHECK constraint, a generated column (``GENERATED ALWAYS AS (…)`` or just ``AS (…)``),
# a default computed per row. A literal default (``DEFAULT 0``) computes nothing.
_QUOTED = re.compile(
    r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`(?:[^`]|``)*`|\[[^\]]*\]|--[^\n]*|/\*.*?\*/", re.S
)
_COMPUTES = re.compile(r"\bCHECK\b|\bAS\s*\(|\bDEFAULT\s*\(", re.I)  # GENERATED … AS (…) too
# The statistics ``ANALYZE`` keeps (stat1; stat4 and the old stat2, stat3 where compiled in).
_STATISTICS = re.compile(r"sqlite_stat\d+", re.I)
# The modules a Kiln index's virtual tables use; another module's code would run on writes.
_MODULES = re.compile(r"^\s*CREATE\s+VIRTUAL\s+TABLE\s+\S+\s+USING\s+(fts5|fts5vocab)\s*\(", re.I)


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
    (or steers query plans) and that this Kiln would not have made."""
    objects, kiln_tables = _expected()
    strange = _foreign_tables(conn)
    for kind, name, table, sql in conn.execute(_OBJECTS).fetchall():
        if (kind, name, sql) in objects:
            continue
        if kind == "index":  # spelled as an older Kiln did, or the migrations' way: columns only
            if table in kiln_tables and _computes(conn, table, name):
                strange.append(f"index {name}")
        elif kind in ("trigger", "view"):
            strange.append(f"{kind} {name}")
        elif kind == "table" and name in kiln_tables and _table_computes(sql):
            strange.append(f"table {name} with an expression")
        elif kind == "table" and _STATISTICS.fullmatch(name):
            strange.append(f"table {name}")
    return strange


def _foreign_tables(conn: sqlite3.Connection) -> list[str]:
    """``["another application's tables: users, log"]`` when the file holds tables but no
    record of Kiln's index migrations (``kiln.index`` steps in ``_sqlite_migrations``, or the
    earlier migrator's ``_migrations`` beside a ``files`` table); else nothing. A file with no
    table yet is a new index."""
    from indexer.schema import LEGACY_TABLE, MIGRATION_SET
    from kiln_errors.sqlite_common import MIGRATIONS_TABLE

    tables = [
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        )
    ]
    if not tables:
        return []
    if MIGRATIONS_TABLE in tables:
        sql = f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE migration_set = ? LIMIT 1"
        if conn.execute(sql, (MIGRATION_SET,)).fetchone():
            return []
    if LEGACY_TABLE in tables and "files" in tables:
        return []
    shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
    return [f"another application's tables: {shown}"]


def _table_computes(sql: str) -> bool:
    """Whether a table's SQL runs an expression on each row written (see ``_COMPUTES``), or
    makes it a virtual table of a module a Kiln index does not use."""
    if re.match(r"\s*CREATE\s+VIRTUAL\b", sql, re.I):
        return not _MODULES.match(sql)
    return bool(_COMPUTES.search(_QUOTED.sub(" ", sql)))


def _computes(conn: sqlite3.Connection, table: str, index: str) -> bool:
    """Whether an index evaluates an expression on each row written (on an expression, or
    partial with a ``WHERE``); an index of plain columns runs nothing."""
    columns = conn.execute("SELECT cid FROM pragma_index_xinfo(?)", (index,)).fetchall()
    partial = conn.execute(
        "SELECT partial FROM pragma_index_list(?) WHERE name = ?", (table, index)
    ).fetchone()
    return any(cid == -2 for (cid,) in columns) or bool(partial and partial[0])
