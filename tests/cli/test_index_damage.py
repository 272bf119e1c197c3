"""An index file Kiln cannot use as it is, through the real `kiln` process: one a newer Kiln
wrote is set aside (never written with the older shape) and rebuilt; an empty or garbage file
likewise; a bad setting fails before anything is written."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest


def kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    (tmp_path / "shapes.py").write_text("def polygon_area(points):\n    return 0\n")
    assert kiln("index", str(tmp_path), cwd=tmp_path).returncode == 0
    return tmp_path


def _found(root: Path) -> list[str]:
    proc = kiln("search", "polygon area", "--root", str(root), "--json", cwd=root)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return [hit["name"] for hit in json.loads(proc.stdout)]


def test_an_index_from_a_newer_kiln_is_set_aside_and_rebuilt(indexed: Path) -> None:
    db = indexed / ".kiln" / "index.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
            "VALUES ('kiln.index', 'm099_from_the_future', 'x')"
        )
    proc = kiln("index", str(indexed), cwd=indexed)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "written by a newer Kiln (steps m099_from_the_future)" in proc.stderr
    with sqlite3.connect(indexed / ".kiln" / "index.db.corrupt") as kept:
        names = {row[0] for row in kept.execute("SELECT name FROM _sqlite_migrations")}
    assert "m099_from_the_future" in names  # the newer Kiln's file, kept as it was
    with sqlite3.connect(db) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM _sqlite_migrations")}
    assert "m099_from_the_future" not in names
    assert "polygon_area" in _found(indexed)


@pytest.mark.parametrize("content", [b"", b"garbage, not an index" * 50])
def test_an_empty_or_garbage_index_is_rebuilt(indexed: Path, content: bytes) -> None:
    db = indexed / ".kiln" / "index.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(content)
    assert "polygon_area" in _found(indexed)
    assert kiln("index", str(indexed), cwd=indexed).returncode == 0
