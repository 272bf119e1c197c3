"""The SQLite side of the index: atomic per-file replacement of a file's rows.

One file, ``<root>/.kiln/index.db``, in WAL mode so searches never wait for the indexer (its
schema and migrations: ``schema``). FTS5 is an external-content table over ``blocks``,
maintained explicitly here, so text is stored once and a file's rows are replaced with a
handful of set-based statements (no per-row Python work beyond one ``executemany``).
``blocks`` is a view: readers use it, and this module writes its two tables, ``block_rows``
(everything but the line span) and ``block_lines`` (the span), directly.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from indexer import filelist, generated
from indexer.rows import Prepared
from indexer.schema import ROW_COLUMNS
from indexer.tokens import camel_parts, name_terms

FTS_COLUMNS = ("fts_path", "fts_name", "signature", "docstring", "text", "idents")


def delete_file_rows(conn: sqlite3.Connection, file_id: int) -> None:
    """Remove everything one file contributed (call inside a transaction)."""
    cols = ", ".join(FTS_COLUMNS)
    conn.execute(
        f"INSERT INTO blocks_fts(blocks_fts, rowid, {cols}) SELECT 'delete', id, {cols} FROM block_rows WHERE file_id = ?",
        (file_id,),
    )
    conn.execute(
        "DELETE FROM block_lines WHERE id IN (SELECT id FROM block_rows WHERE file_id = ?)",
        (file_id,),
    )
    conn.execute("DELETE FROM block_rows WHERE file_id = ?", (file_id,))
    conn.execute("DELETE FROM defs WHERE file_id = ?", (file_id,))
    conn.execute("DELETE FROM refs WHERE file_id = ?", (file_id,))
    filelist.remove(conn, file_id)


@dataclass
class Touched:
    """What a write of one file's rows did to what searches keep (``search_cache.Symbols``):
    the names whose ``defs``/``refs`` rows it wrote (None: not known, as for a whole file),
    and the block rows it added, removed or rewrote in place (the re-ranking keeps their
    columns: ``block_terms``)."""

    names: set[str] | None = field(default_factory=set)
    rows: set[int] = field(default_factory=set)


def write_file(
    conn: sqlite3.Connection,
    rel: str,
    language: str,
    mtime_ns: int,
    size: int,
    digest: str,
    prepared: Prepared,
    touched: Touched | None = None,
) -> None:
    """Replace one file's rows (call inside a transaction: all of it lands or none), and
    its ``generated`` flag with what the new rows say; ``touched`` receives the block rows it
    added or removed."""
    count = len(prepared.rows)
    fresh = list(range(count))
    says = int(generated.of_texts([r[_TEXT] for r in prepared.rows if r[_START] == 1]))
    row = conn.execute("SELECT id FROM files WHERE path = ?", (rel,)).fetchone()
    if row is not None:
        file_id = row[0]
        fresh = _reuse_unchanged(conn, file_id, prepared, touched)
        conn.execute(
            "UPDATE files SET language=?, mtime_ns=?, size=?, hash=?, blocks=?, indexed_at=?,"
            " generated=? WHERE id=?",
            (language, mtime_ns, size, digest, count, time.time(), says, file_id),
        )
    else:
        cur = conn.execute(
            "INSERT INTO files (path, language, mtime_ns, size, hash, blocks, indexed_at,"
            " generated) VALUES (?,?,?,?,?,?,?,?)",
            (rel, language, mtime_ns, size, digest, count, time.time(), says),
        )
        file_id = cur.lastrowid
    added = _insert(conn, file_id, prepared, fresh)
    if touched is not None:
        touched.rows.update(added)
    filelist.put(conn, file_id, prepared.words)


def write_splice(
    conn: sqlite3.Connection,
    rel: str,
    meta: tuple[str, int, int, str],
    count: int,
    splice: Any,
    prepared: Prepared,
    touched: Touched | None = None,
) -> bool:
    """Replace one function's rows after an edit inside it (a ``rechunk.Splice``): its rows
    take the new blocks' values in place (same row ids; only the names whose definitions or
    references changed touch ``defs``/``refs``), the rows below move by the lines the edit
    added, every other row stays as it is. Returns False, having written nothing, when the
    stored rows are not the version the splice applies to (the caller then writes the whole
    file). ``touched`` receives what it wrote that searches may keep. The file's
    ``generated`` flag is asked again only if the function's rows start at line 1: no other
    row's text changes, and the rows below the edit stay below the function."""
    language, mtime_ns, size, digest = meta
    row = conn.execute("SELECT id, hash FROM files WHERE path = ?", (rel,)).fetchone()
    if row is None or row[1] != splice.old_digest:
        return False
    file_id = row[0]
    stale = conn.execute(
        "SELECT id, refs FROM blocks WHERE file_id = ? AND start_line >= ? AND end_line <= ?"
        " ORDER BY start_line, -end_line, id",
        (file_id, splice.old_first, splice.old_last),
    ).fetchall()
    if len(stale) != splice.replaced:
        return False
    marks = ",".join("?" * len(stale))
    old_blocks = conn.execute(
        f"SELECT name, signature, docstring, text FROM block_rows WHERE id IN ({marks})",
        [r[0] for r in stale],
    ).fetchall()
    reused = stale[: len(prepared.rows)]
    gone = [r[0] for r in stale[len(reused) :]]
    if touched is not None:
        touched.rows.update(r[0] for r in stale)  # rewritten in place or removed
    if gone and touched is not None and touched.names is not None:
        marks = ",".join("?" * len(gone))
        for table in ("defs", "refs"):
            touched.names.update(
                r[0]
                for r in conn.execute(f"SELECT name FROM {table} WHERE block_id IN ({marks})", gone)
            )
    _delete_blocks(conn, file_id, gone)
    _fts(conn, "delete", [r[0] for r in reused])
    if splice.delta:  # narrow rows (``block_lines``): a page or two, however many move
        mine = "id IN (SELECT id FROM block_rows WHERE file_id = ?)"
        conn.execute(
            f"UPDATE block_lines SET start_line = start_line + ? WHERE {mine} AND start_line > ?",
            (splice.delta, file_id, splice.edit_last),
        )
        conn.execute(
            f"UPDATE block_lines SET end_line = end_line + ? WHERE {mine} AND end_line >= ?",
            (splice.delta, file_id, splice.edit_last),
        )
    conn.execute(
        "UPDATE files SET language=?, mtime_ns=?, size=?, hash=?, blocks=?, indexed_at=? WHERE id=?",
        (language, mtime_ns, size, digest, count, time.time(), file_id),
    )
    changed = _overwrite(conn, file_id, prepared, reused)
    fresh = list(range(len(reused), len(prepared.rows)))
    added = _insert(conn, file_id, prepared, fresh)
    if splice.old_first <= 1 or any(r[_START] == 1 for r in prepared.rows):
        says = int(generated.recount(conn, file_id))  # the rows at line 1 changed: ask them
        conn.execute("UPDATE files SET generated = ? WHERE id = ?", (says, file_id))
    if touched is not None:
        touched.rows.update(added)
        names = touched.names if touched.names is not None else set()
        names.update(changed)
        for i in fresh:
            names.update(prepared.defs[i], prepared.refs[i])
    new_blocks = [(r[_NAME], r[_SIG], r[_DOC], r[_TEXT]) for r in prepared.rows]
    digests = (splice.old_digest, digest)
    filelist.spliced(conn, file_id, rel, digests, old_blocks, new_blocks, count)
    return True


_SET_COLUMNS = ", ".join(f"{c} = ?" for c in ROW_COLUMNS.split(", ")[2:])


def _overwrite(
    conn: sqlite3.Connection, file_id: int, prepared: Prepared, rows: list[tuple[int, str]]
) -> set[str]:
    """Give the blocks ``rows`` (id, stored refs) the first prepared rows' values, in place:
    the row ids stay, and of the symbol rows only those whose names changed are written
    (typing in a body seldom changes what it defines or references); returns those names."""
    changed: set[str] = set()
    if not rows:
        return changed
    ids = [block_id for block_id, _ in rows]
    rows_and_lines = [_split(_complete(prepared.rows[i])) for i in range(len(ids))]
    conn.executemany(
        f"UPDATE block_rows SET {_SET_COLUMNS} WHERE id = ?",
        [(*row, block_id) for (row, _), block_id in zip(rows_and_lines, ids, strict=True)],
    )
    conn.executemany(
        "UPDATE block_lines SET start_line = ?, end_line = ? WHERE id = ?",
        [(*lines, block_id) for (_, lines), block_id in zip(rows_and_lines, ids, strict=True)],
    )
    _fts(conn, "insert", ids)
    marks = ",".join("?" * len(ids))
    old_defs: dict[int, set[str]] = {block_id: set() for block_id in ids}
    for name, block_id in conn.execute(
        f"SELECT name, block_id FROM defs WHERE file_id = ? AND block_id IN ({marks})",
        [file_id, *ids],
    ):
        old_defs[block_id].add(name)
    for table, old, new in (
        ("defs", [old_defs[block_id] for block_id in ids], prepared.defs),
        ("refs", [set(refs.split()) for _, refs in rows], prepared.refs),
    ):
        pairs = list(zip(ids, old, new[: len(ids)], strict=True))
        gone = [(n, block_id) for block_id, was, now in pairs for n in was.difference(now)]
        added = [
            (n, block_id, file_id) for block_id, was, now in pairs for n in now if n not in was
        ]
        conn.executemany(f"DELETE FROM {table} WHERE name = ? AND block_id = ?", gone)
        conn.executemany(f"INSERT OR IGNORE INTO {table} VALUES (?, ?, ?)", added)
        changed.update(n for n, _ in gone)
        changed.update(n for n, _, _ in added)
    return changed


def _fts(conn: sqlite3.Connection, op: str, ids: list[int]) -> None:
    """Remove (``delete``: before the rows change) or add (``insert``: after) the FTS
    entries of the blocks ``ids``."""
    if not ids:
        return
    cols = ", ".join(FTS_COLUMNS)
    marks = ",".join("?" * len(ids))
    command = "blocks_fts, rowid" if op == "delete" else "rowid"
    values = "'delete', id" if op == "delete" else "id"
    conn.execute(
        f"INSERT INTO blocks_fts({command}, {cols}) SELECT {values}, {cols} FROM block_rows"
        f" WHERE id IN ({marks})",
        ids,
    )


def _insert(
    conn: sqlite3.Connection, file_id: int, prepared: Prepared, fresh: list[int]
) -> list[int]:
    """Insert the prepared rows numbered ``fresh`` with their FTS, symbol and reference rows;
    returns their row ids."""
    if not fresh:
        return []
    first = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM block_rows").fetchone()[0]
    ids = {i: first + n for n, i in enumerate(fresh)}
    split = [_split(_complete(prepared.rows[i])) for i in fresh]
    conn.executemany(
        f"INSERT INTO block_rows ({ROW_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [(ids[i], file_id, *row) for i, (row, _) in zip(fresh, split, strict=True)],
    )
    conn.executemany(
        "INSERT INTO block_lines VALUES (?, ?, ?)",
        [(ids[i], *lines) for i, (_, lines) in zip(fresh, split, strict=True)],
    )
    conn.executemany(
        f"INSERT INTO blocks_fts(rowid, {', '.join(FTS_COLUMNS)}) VALUES (?,?,?,?,?,?,?)",
        [(ids[i], *_fts_values(row)) for i, (row, _) in zip(fresh, split, strict=True)],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO defs VALUES (?, ?, ?)",
        [(n, ids[i], file_id) for i in fresh for n in prepared.defs[i]],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO refs VALUES (?, ?, ?)",
        [(n, ids[i], file_id) for i in fresh for n in prepared.refs[i]],
    )
    return list(ids.values())


# The FTS columns of a ``block_rows`` row after id and file_id (as ``_split`` gives it).
_fts_values = itemgetter(*(ROW_COLUMNS.split(", ")[2:].index(c) for c in FTS_COLUMNS))


_HASH, _NAME, _KIND, _START, _END, _TEXT = 8, 3, 2, 6, 7, 9  # positions in a prepared row
_SIG, _DOC, _REFS = 4, 5, 10


def _split(row: tuple) -> tuple[tuple, tuple[int, int]]:
    """A prepared row as its ``block_rows`` columns (after id and file_id) and its line span."""
    return (*row[:_START], *row[_END + 1 :]), (row[_START], row[_END])


def _complete(row: tuple) -> tuple:
    """A prepared row with the derived columns ``prepare`` skipped filled in."""
    if row[-1] is not None:
        return row
    return (*row[:-2], name_terms(row[_NAME]), camel_parts(row[_TEXT]))


def _reuse_unchanged(
    conn: sqlite3.Connection, file_id: int, prepared: Prepared, touched: Touched | None
) -> list[int]:
    """Keep the rows of blocks that did not change (only their lines may move), delete the
    rest; returns the indexes of prepared rows still to insert. An edit then costs FTS work
    for the edited blocks only, which is what keeps ``update_file`` fast. "Did not change" is
    every stored value but the lines, not the text alone: the same text can parse otherwise
    when the file around it has a syntax error (a docstring no longer seen as one)."""
    defs: dict[int, list[str]] = {}
    for block_id, name in conn.execute(
        "SELECT block_id, name FROM defs WHERE file_id = ? ORDER BY block_id, name", (file_id,)
    ):
        defs.setdefault(block_id, []).append(name)
    old: dict[tuple, list[int]] = {}
    for block_id, *values in conn.execute(
        "SELECT id, hash, name, kind, signature, docstring, refs FROM block_rows WHERE file_id = ?",
        (file_id,),
    ):
        old.setdefault((*values, *defs.get(block_id, ())), []).append(block_id)
    moved: list[tuple[int, int, int]] = []
    fresh: list[int] = []
    for i, r in enumerate(prepared.rows):
        same = old.get(
            (r[_HASH], r[_NAME], r[_KIND], r[_SIG], r[_DOC], r[_REFS], *prepared.defs[i])
        )
        if same:
            moved.append((r[_START], r[_END], same.pop()))
        else:
            fresh.append(i)
    gone = [block_id for ids in old.values() for block_id in ids]
    if touched is not None:
        touched.rows.update(gone)
    _delete_blocks(conn, file_id, gone)
    conn.executemany("UPDATE block_lines SET start_line = ?, end_line = ? WHERE id = ?", moved)
    return fresh


def _delete_blocks(conn: sqlite3.Connection, file_id: int, stale: list[int]) -> None:
    if not stale:
        return
    _fts(conn, "delete", stale)
    marks = ",".join("?" * len(stale))
    conn.execute(f"DELETE FROM block_rows WHERE id IN ({marks})", stale)
    conn.execute(f"DELETE FROM block_lines WHERE id IN ({marks})", stale)
    conn.execute(f"DELETE FROM defs WHERE file_id = ? AND block_id IN ({marks})", [file_id, *stale])
    conn.execute(f"DELETE FROM refs WHERE file_id = ? AND block_id IN ({marks})", [file_id, *stale])


def remove_file(conn: sqlite3.Connection, rel: str) -> bool:
    row = conn.execute("SELECT id FROM files WHERE path = ?", (rel,)).fetchone()
    if row is None:
        return False
    delete_file_rows(conn, row[0])
    conn.execute("DELETE FROM files WHERE id = ?", (row[0],))
    return True
