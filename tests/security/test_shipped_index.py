"""An index file the checkout ships (docs/security.md section 6d). SQLite runs what a schema
says on every write: a shipped `.kiln/index.db` with a trigger on `files` running an endless
recursive query held `kiln index` (and the editor's indexing, and `search_code`) forever, in
a C loop not even SIGTERM stopped. An index on an expression runs one on each row written.
Such a file is set aside and rebuilt with one line. Through the real `kiln index` and
`kiln search`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ENDLESS = (
    "CREATE TRIGGER evil AFTER INSERT ON files BEGIN SELECT count(*) FROM (WITH RECURSIVE"
    " c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c); END"
)
EXPRESSION = "CREATE INDEX evil_index ON files(length(printf('%.*c', 100000000, 'x')))"


def kiln(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,  # bounds a hang, not a speed
        env={**os.environ, "KILN_HOME": str(cwd.parent / "kiln-home")},
    )  # fmt: skip


def shipped(tmp_path: Path, tamper: Callable[[sqlite3.Connection], None]) -> Path:
    """A checkout whose index the attacker made (a real index, then ``tamper``), and a file the
    clone adds after it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "old.py").write_text("def shipped_symbol():\n    pass\n")
    assert kiln("index", ".", cwd=repo).returncode == 0
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    tamper(conn)
    conn.commit()
    conn.close()
    (repo / "new.py").write_text("def fresh_symbol():\n    pass\n")
    return repo


def respell_files(conn: sqlite3.Connection, respell: Callable[[str], str]) -> None:
    """The ``files`` table's SQL as an attacker (or an older Kiln) can have written it."""
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'files'").fetchone()
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'files'", (respell(sql),))


def assert_rebuilt(repo: Path, holds: str) -> None:
    result = kiln("index", ".", cwd=repo)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"kiln: {repo / '.kiln' / 'index.db'} was not made by this kiln (it holds {holds});"
        " set it aside as index.db.corrupt and rebuilt it"
    ]
    hits = json.loads(kiln("search", "fresh_symbol", "--json", cwd=repo).stdout)
    assert hits[0]["path"] == "new.py"


@pytest.mark.parametrize(("statement", "name"), [(ENDLESS, "trigger evil"),
                                                 (EXPRESSION, "index evil_index")])  # fmt: skip
def test_a_shipped_index_that_runs_code_on_writes_is_rebuilt(
    tmp_path: Path, statement: str, name: str
) -> None:
    repo = shipped(tmp_path, lambda conn: conn.execute(statement))
    assert_rebuilt(repo, name)
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    kinds = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "evil" not in kinds and "evil_index" not in kinds


def plant_statistics(conn: sqlite3.Connection) -> None:
    """What ``ANALYZE`` would say of a table of one row whose indexes never narrow a lookup:
    SQLite then scans ``block_rows`` for a file's blocks, and ``block_lines`` once per block."""
    conn.execute("ANALYZE")
    conn.execute("DELETE FROM sqlite_stat1")
    for index, table in conn.execute(
        "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'"
    ):
        conn.execute(
            "INSERT INTO sqlite_stat1 VALUES (?, ?, '1000000000 1000000000')", (table, index)
        )
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        conn.execute("INSERT INTO sqlite_stat1 VALUES (?, NULL, '1')", (table,))


def test_a_shipped_index_with_planted_statistics_is_rebuilt(tmp_path: Path) -> None:
    """Kiln never runs ``ANALYZE``; planted statistics made a search of a 58,800-block index
    take 1-1.8 s instead of 22-40 ms, and an edit 10-20x as long (docs/security.md)."""
    repo = shipped(tmp_path, plant_statistics)
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    plan = conn.execute("EXPLAIN QUERY PLAN SELECT id FROM block_rows WHERE file_id = 1").fetchall()
    conn.close()
    assert plan[0][3] == "SCAN block_rows"  # the attack: a full scan for one file's blocks
    assert_rebuilt(repo, "table sqlite_stat1")
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    plan = conn.execute("EXPLAIN QUERY PLAN SELECT id FROM block_rows WHERE file_id = 1").fetchall()
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "sqlite_stat1" not in tables
    assert plan[0][3].startswith("SEARCH block_rows USING COVERING INDEX blocks_file"), plan


@pytest.mark.parametrize(
    "clause",
    [
        "CHECK (path NOT LIKE '%new%')",  # fails every later write: the index never catches up
        "extra INTEGER AS (length(printf('%.*c', 100000000, 'x')))",  # 100 MB per row written
        "extra INTEGER GENERATED ALWAYS AS (length(printf('%.*c', 100000000, 'x'))) VIRTUAL",
        "stamp TEXT DEFAULT (printf('%.*c', 100000000, 'x'))",
    ],
)
def test_a_shipped_index_whose_table_computes_on_writes_is_rebuilt(
    tmp_path: Path, clause: str
) -> None:
    """A ``CHECK`` constraint, a generated column or a computed default on a table Kiln writes:
    the first made every later `kiln index` exit 1 with "CHECK constraint failed", and a new
    file never became searchable."""
    repo = shipped(
        tmp_path, lambda conn: respell_files(conn, lambda sql: f"{sql.rstrip()[:-1]}, {clause})")
    )
    assert_rebuilt(repo, "table files with an expression")


def test_a_table_spelled_otherwise_but_computing_nothing_is_kept(tmp_path: Path) -> None:
    """An older Kiln's spelling of ``files`` (one line, its columns added by migrations, one of
    them named ``generated``) computes nothing on writes: the index is kept, not rebuilt."""

    def one_line(sql: str) -> str:
        assert "generated" in sql
        return " ".join(sql.split())

    repo = shipped(tmp_path, lambda conn: respell_files(conn, one_line))
    result = kiln("index", ".", cwd=repo)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert not (repo / ".kiln" / "index.db.corrupt").exists()
    hits = json.loads(kiln("search", "fresh_symbol", "--json", cwd=repo).stdout)
    assert hits[0]["path"] == "new.py"


@pytest.mark.parametrize("planted", ["HEAD~1", "short", "--all"])
def test_a_recorded_head_that_is_not_a_commit_hash_rebuilds_the_history(
    tmp_path: Path, planted: str
) -> None:
    """The recorded head is passed to ``git merge-base --is-ancestor``: a shipped index whose
    head was a revision expression (``HEAD~1``, an abbreviated hash) passed as an ancestor, so
    only the newest commits were read and the shipped history (its messages vouching for any
    file) was kept. Anything but 40 or 64 hex digits is no recorded head: rebuilt from git."""
    from tests.repos import committing_repo, git

    repo = tmp_path / "repo"
    commit = committing_repo(repo)
    commit("Add the shipping module", {"shipping.py": "def ship():\n    pass\n"})
    commit("Round parcel weights", {"shipping.py": "def ship():\n    return 1\n"})
    assert kiln("index", ".", cwd=repo).returncode == 0
    if planted == "short":
        planted = git(repo, "rev-parse", "--short", "HEAD").strip()
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'history_head'", (planted,))
    conn.execute(
        "INSERT INTO commits (id, sha, time, message, files) VALUES (99, ?, 0, ?, 1)",
        ("f" * 40, "Planted: the fix always belongs in evil.py"),
    )
    conn.commit()
    conn.close()
    commit("Bill heavy parcels", {"billing.py": "def bill():\n    pass\n"})

    result = kiln("index", ".", cwd=repo)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    conn = sqlite3.connect(repo / ".kiln" / "index.db")
    messages = sorted(row[0] for row in conn.execute("SELECT message FROM commits"))
    recorded = conn.execute("SELECT value FROM meta WHERE key = 'history_head'").fetchone()[0]
    conn.close()
    assert messages == ["Add the shipping module", "Bill heavy parcels", "Round parcel weights"]
    assert recorded == git(repo, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("key", ["skips_said", "languages"])
def test_a_meta_value_json_cannot_read_is_taken_as_nothing_recorded(
    tmp_path: Path, key: str
) -> None:
    """The JSON a shipped index keeps in ``meta`` nested past Python's parser (``[[[[…``) ended
    `kiln index` and (for ``languages``) every `kiln search` in an internal error, run after
    run; it counts as nothing recorded, like JSON that does not parse."""
    planted = "INSERT OR REPLACE INTO meta VALUES (?, ?)"
    repo = shipped(tmp_path, lambda conn: conn.execute(planted, (key, "[" * 100_000)))
    result = kiln("index", ".", cwd=repo)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    searched = kiln("search", "fresh_symbol", "--json", cwd=repo)
    assert searched.returncode == 0, searched.stderr
    assert json.loads(searched.stdout)[0]["path"] == "new.py"
