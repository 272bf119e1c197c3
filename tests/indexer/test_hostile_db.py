"""A `.kiln/index.db` that is not what kiln wrote, through the real `kiln index` / `kiln search`
(docs/security.md, "The code index"): damaged, another program's schema, a schema whose tables
lack columns, read-only. One line on stderr; the index is set aside and rebuilt where it can be,
and a clear non-zero exit where it cannot be written; never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import write

pytestmark = pytest.mark.e2e


def kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "KILN_HOME": str(cwd.parent / "home")},
    )  # fmt: skip


def sql(db: Path, *statements: str) -> None:
    conn = sqlite3.connect(db)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def sql_value(db: Path, query: str) -> object:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(query).fetchone()[0]
    finally:
        conn.close()


def truncate(db: Path) -> None:
    with db.open("r+b") as fh:
        fh.truncate(5000)


def random_bytes(db: Path) -> None:
    db.write_bytes(os.urandom(100_000))


def other_program(db: Path) -> None:
    db.unlink()
    sql(db, "CREATE TABLE files (x)", "CREATE TABLE meta (a, b, c)", "INSERT INTO files VALUES (1)")


def table_dropped(db: Path) -> None:
    sql(db, "DROP TABLE files")


def column_renamed(db: Path) -> None:
    sql(db, "ALTER TABLE files RENAME COLUMN path TO p")


@pytest.mark.parametrize(
    "damage, said",
    [
        (truncate, "was unreadable"),
        (random_bytes, "was unreadable"),
        (other_program, "was not made by this kiln (it holds another application's tables"),
        (table_dropped, "is not an index this kiln can read"),
        (column_renamed, "is not an index this kiln can read"),
    ],
)
def test_an_index_file_kiln_cannot_use_is_set_aside_and_rebuilt(
    repo: Path, damage: object, said: str
) -> None:
    write(repo, "m.py", "def survivor_symbol():\n    pass\n")
    assert kiln("index", ".", cwd=repo).returncode == 0
    db = repo / ".kiln" / "index.db"
    damage(db)  # type: ignore[operator]
    for args in (("search", "survivor_symbol", "--json"), ("index", ".")):
        result = kiln(*args, cwd=repo)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        if args[0] == "search":
            lines = [line for line in result.stderr.splitlines() if line.strip()]
            assert len(lines) == 1 and lines[0].startswith("kiln: ") and said in lines[0], lines
            assert "index.db.corrupt" in lines[0] or "rebuilt" in lines[0]
            assert json.loads(result.stdout)[0]["name"] == "survivor_symbol"
        else:
            assert result.stderr == ""  # the rebuilt index is used as it is
    assert (repo / ".kiln" / "index.db.corrupt").exists()  # kept for a bug report


def test_another_applications_database_is_set_aside_unchanged_not_adopted(repo: Path) -> None:
    """A shipped `.kiln/index.db` that is another application's database, whose tables Kiln
    does not make: it was migrated in place (WAL mode and Kiln's tables beside its own). It
    is set aside byte for byte, its trigger never fires, and a fresh index is built."""
    write(repo, "m.py", "def survivor_symbol():\n    pass\n")
    db = repo / ".kiln" / "index.db"
    db.parent.mkdir()
    sql(
        db,
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
        "CREATE TABLE log (msg TEXT)",
        "INSERT INTO users VALUES (1, 'x')",
    )
    original = db.read_bytes()
    result = kiln("search", "survivor_symbol", "--json", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"kiln: {db} was not made by this kiln (it holds another application's tables: log,"
        " users); set it aside as index.db.corrupt and rebuilt it"
    ]
    assert json.loads(result.stdout)[0]["name"] == "survivor_symbol"
    assert (repo / ".kiln" / "index.db.corrupt").read_bytes() == original
    assert sql_value(db, "SELECT count(*) FROM sqlite_master WHERE name = 'users'") == 0
    assert kiln("index", ".", cwd=repo).stderr == ""  # the fresh index is Kiln's own


def test_extra_tables_alone_are_left_alone(repo: Path) -> None:
    """A table this Kiln does not make, with no migration step it does not know, is no reason
    to rebuild (a newer Kiln's recorded steps are: tests/cli/test_index_damage.py)."""
    write(repo, "m.py", "def survivor_symbol():\n    pass\n")
    assert kiln("index", ".", cwd=repo).returncode == 0
    sql(
        repo / ".kiln" / "index.db",
        "CREATE TABLE future_signal (x)",
        "INSERT INTO future_signal VALUES (7)",
    )
    result = kiln("search", "survivor_symbol", "--json", cwd=repo)
    assert result.returncode == 0 and result.stderr == ""
    assert json.loads(result.stdout)[0]["name"] == "survivor_symbol"
    assert not (repo / ".kiln" / "index.db.corrupt").exists()
    assert sql_value(repo / ".kiln" / "index.db", "SELECT x FROM future_signal") == 7


def _make_read_only(db: Path) -> None:
    """Root writes whatever a file's mode says: the immutable attribute stops it too."""
    if os.geteuid() != 0:
        db.chmod(0o444)
        return
    done = subprocess.run(["chattr", "+i", str(db)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot make a file read-only as root here: {done.stderr!r}")


def test_a_read_only_index_gives_one_line_and_a_non_zero_exit(repo: Path) -> None:
    write(repo, "m.py", "def survivor_symbol():\n    pass\n")
    assert kiln("index", ".", cwd=repo).returncode == 0
    db = repo / ".kiln" / "index.db"
    write(repo, "n.py", "def newcomer_symbol():\n    pass\n")  # something to write
    _make_read_only(db)
    try:
        result = kiln("index", ".", cwd=repo)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode != 0 and "Traceback" not in result.stderr
        assert len(lines) == 1 and "read-only" in lines[0] and ".kiln is writable" in lines[0]
        found = kiln("search", "survivor_symbol", "--json", cwd=repo)  # reading still works
        assert json.loads(found.stdout)[0]["name"] == "survivor_symbol"
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(db)], capture_output=True)
        db.chmod(0o644)
    assert kiln("index", ".", cwd=repo).returncode == 0  # writable again: the run resumes
    found = kiln("search", "newcomer_symbol", "--json", cwd=repo)
    assert json.loads(found.stdout)[0]["name"] == "newcomer_symbol"


@pytest.mark.parametrize("name", ["index.db", "index.db-wal"])
def test_an_index_file_that_is_a_fifo_or_a_folder_is_refused_with_one_line(
    repo: Path, name: str
) -> None:
    write(repo, "m.py", "def survivor_symbol():\n    pass\n")
    (repo / ".kiln").mkdir()
    os.mkfifo(repo / ".kiln" / name)  # SQLite's reads of it would wait for a writer
    for args in (("index", "."), ("search", "survivor_symbol")):
        result = kiln(*args, cwd=repo)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert len(lines) == 1 and "is not a regular file" in lines[0] and "remove it" in lines[0]
    (repo / ".kiln" / name).unlink()
    (repo / ".kiln" / name).mkdir()
    assert "is not a regular file" in kiln("index", ".", cwd=repo).stderr
    (repo / ".kiln" / name).rmdir()  # the documented way out
    assert kiln("index", ".", cwd=repo).returncode == 0
    found = json.loads(kiln("search", "survivor_symbol", "--json", cwd=repo).stdout)
    assert found[0]["name"] == "survivor_symbol"


def test_a_folder_where_a_damaged_index_is_set_aside_is_refused_with_one_line(
    repo: Path,
) -> None:
    """A checkout's `.kiln/index.db.corrupt/index.db` beside a damaged index: setting it aside
    failed every run with "Destination path … already exists" (exit 1); an empty such folder
    took the damaged file in."""
    write(repo, "m.py", "def survivor_symbol():\n    pass\n")
    (repo / ".kiln" / "index.db.corrupt" / "index.db").mkdir(parents=True)
    (repo / ".kiln" / "index.db").write_bytes(b"not a database" * 512)
    for args in (("index", "."), ("search", "survivor_symbol")):
        result = kiln(*args, cwd=repo)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert lines == [
            f"kiln: {repo / '.kiln' / 'index.db.corrupt'} is not a regular file"
            " (remove it: a damaged index is set aside there)"
        ]
    shutil.rmtree(repo / ".kiln" / "index.db.corrupt")  # the way out the line names
    result = kiln("index", ".", cwd=repo)
    assert result.returncode == 0 and "rebuilt it from scratch" in result.stderr
    assert (repo / ".kiln" / "index.db.corrupt").read_bytes() == b"not a database" * 512
    found = json.loads(kiln("search", "survivor_symbol", "--json", cwd=repo).stdout)
    assert found[0]["name"] == "survivor_symbol"


def test_a_kiln_file_where_the_index_folder_goes_is_one_line(repo: Path) -> None:
    """A file named `.kiln` in the root: "cannot create …/.kiln: File exists (check that
    <root>/.kiln is writable)", which it was; now what it is and what to do."""
    write(repo, "m.py", "def survivor_symbol():\n    pass\n")
    (repo / ".kiln").write_text("not a folder\n")
    for args in (("index", "."), ("search", "survivor_symbol")):
        result = kiln(*args, cwd=repo)
        assert result.returncode == 2, result.stderr
        assert result.stderr.splitlines() == [
            f"kiln: {repo / '.kiln'} is not a folder"
            f" (move it away: the index is written to the folder {repo / '.kiln'})"
        ]
    (repo / ".kiln").unlink()
    assert kiln("index", ".", cwd=repo).returncode == 0
