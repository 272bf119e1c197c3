"""A checkout that tracks ``.kiln/index.db-wal``: a `git pull` writes it beside the user's own
index, and SQLite applied its frames over the index at the next open when their checksums held
(the index is built from content the checkout controls, so its pages can be foreseen). Kiln's
pairing note (``indexer/wal_pairing.py``) vouches only for the ``-wal`` Kiln opened with the
file; any other one that no process holds open is set aside as ``index.db-wal.unvouched``,
never applied. One another program has open is left to it (``tests/lsp/
test_index_locked_e2e.py``), and a killed run's own ``-wal`` is still recovered
(``tests/indexer/test_index_swap.py``)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from indexer import Index

from .conftest import write


def _crafted_wal(db: Path, work: Path) -> bytes:
    """A valid ``-wal`` for ``db``'s own pages: a copy of the index, one row added to its
    ``meta`` table, the ``-wal`` read while the writer still holds it (no checkpoint)."""
    work.mkdir()
    copy = work / "index.db"
    shutil.copyfile(db, copy)
    conn = sqlite3.connect(copy, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("INSERT INTO meta(key, value) VALUES ('planted', 'by the checkout')")
        wal = (work / "index.db-wal").read_bytes()
    finally:
        conn.close()
    assert len(wal) > 32
    return wal


def _planted(db: Path) -> bool:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return bool(conn.execute("SELECT 1 FROM meta WHERE key = 'planted'").fetchall())
    finally:
        conn.close()


def test_a_wal_a_checkout_ships_beside_the_index_is_set_aside_not_applied(
    repo: Path, tmp_path: Path
) -> None:
    write(repo, "app.py", "def greet(name):\n    return name\n")
    with Index(repo) as idx:
        idx.update()
    db = repo / ".kiln" / "index.db"
    wal = db.with_name("index.db-wal")
    assert not wal.exists()
    crafted = _crafted_wal(db, tmp_path / "craft")

    probe = tmp_path / "probe"  # SQLite on its own applies it: the -wal is a valid one
    probe.mkdir()
    shutil.copyfile(db, probe / "index.db")
    (probe / "index.db-wal").write_bytes(crafted)
    assert _planted(probe / "index.db")

    wal.write_bytes(crafted)  # as `git pull` writes a tracked file: a new file
    before = db.read_bytes()
    with Index(repo) as idx:
        assert idx.recovered is not None and "index.db-wal.unvouched" in idx.recovered
        assert "\n" not in idx.recovered
        assert [h.name for h in idx.search("greet")] == ["greet"]
    assert not _planted(db)
    assert db.with_name("index.db-wal.unvouched").read_bytes() == crafted
    assert len(db.read_bytes()) == len(before)


def test_a_wal_shipped_after_a_clean_close_is_not_vouched_for(repo: Path, tmp_path: Path) -> None:
    """The note of a closed index is dropped with its ``-wal``: a ``-wal`` written later, even
    under the inode number the old one had, is not taken for Kiln's."""
    write(repo, "app.py", "def greet(name):\n    return name\n")
    with Index(repo) as idx:
        idx.update()
    db = repo / ".kiln" / "index.db"
    assert not db.with_name("index.db-pair").exists()
    crafted = _crafted_wal(db, tmp_path / "craft")
    db.with_name("index.db-wal").write_bytes(crafted)
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server", "index", str(repo)], capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "index.db-wal.unvouched" in done.stderr, done.stderr
    assert not _planted(db)
