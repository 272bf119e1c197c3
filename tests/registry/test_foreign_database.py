"""`kiln registry …` pointed at a folder whose `registry.db` is another application's SQLite
database (or no database at all) refuses in one line, exit 2, and leaves the file's bytes as
they were. Before, the registry's migrations added their tables to it (and switched it to WAL
mode) as if it were a registry. A missing or empty file is a new registry, as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.registry.conftest import cli_env, fails, kiln, ok, serving


def _foreign(data: Path) -> bytes:
    data.mkdir(parents=True)
    db = sqlite3.connect(data / "registry.db")
    db.executescript(
        "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL);"
        "INSERT INTO invoices (total) VALUES (12.5);"
    )
    db.close()
    return (data / "registry.db").read_bytes()


@pytest.mark.parametrize(
    "args",
    [
        ("registry", "serve", "--port", "0"),
        ("registry", "token", "--namespace", "acme"),
        ("registry", "audit"),
        ("registry", "usage", "acme"),
        ("registry", "key", "--new"),
    ],
)
def test_another_applications_database_is_refused_untouched(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    data = tmp_path / "data"
    before = _foreign(data)
    result = kiln(*args, "--data", str(data), env=cli_env(tmp_path / "home"), cwd=tmp_path)
    fails(result, 2, f"kiln: {data / 'registry.db'} is not a Kiln registry database")
    assert "invoices" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""
    assert (data / "registry.db").read_bytes() == before
    assert sorted(p.name for p in data.iterdir()) == ["registry.db"]  # no key, no blobs/


def test_a_file_that_is_no_database_is_refused_untouched(tmp_path: Path) -> None:
    target = tmp_path / "notes.db"
    target.write_text("not a database, just notes\n" * 20)
    result = kiln(
        "registry", "token", "--namespace", "acme", "--db", f"sqlite://{target}",
        env=cli_env(tmp_path / "home"), cwd=tmp_path,
    )  # fmt: skip
    fails(result, 2, f"kiln: {target} is not a Kiln registry database")
    assert target.read_text() == "not a database, just notes\n" * 20
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_an_empty_file_and_an_existing_registry_are_served(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "registry.db").touch()  # an empty file is a new registry
    env = cli_env(tmp_path / "home")
    ok(kiln("registry", "token", "--namespace", "acme", "--data", str(data), env=env, cwd=tmp_path))
    with serving(data, tmp_path / "home"):  # and the registry it became is one
        pass
    assert ok(kiln("registry", "audit", "--data", str(data), env=env, cwd=tmp_path)) == ""


@pytest.mark.parametrize(
    "args",
    [
        ("registry", "serve", "--port", "0"),
        ("registry", "token", "--namespace", "acme"),
        ("registry", "sweep"),
    ],
)
def test_a_db_file_in_a_missing_folder_is_refused_and_no_folder_made(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """A mistyped `--db sqlite:///…` folder is said, not made: the registry would live
    where nobody looks for it."""
    data = tmp_path / "data"
    target = tmp_path / "missing" / "dir" / "x.db"
    result = kiln(
        *args, "--data", str(data), "--db", f"sqlite://{target}",
        env=cli_env(tmp_path / "home"), cwd=tmp_path,
    )  # fmt: skip
    fails(result, 2, f"the folder {target.parent} does not exist")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "missing").exists()
