"""A session store Kiln cannot use as it is, through the real `kiln` process: a store a newer
Kiln wrote is refused untouched; a session whose rows were damaged is refused in one line (the
other sessions still work); a truncated store is set aside and the next run works."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest


def kiln(*args: str, cwd: Path, script: list | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if script is not None:
        path = cwd / "script.json"
        path.write_text(json.dumps(script))
        env.update(KILN_PROVIDER="scripted", KILN_SCRIPT=str(path))
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def one_line(proc: subprocess.CompletedProcess, code: int) -> str:
    assert proc.returncode == code and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kiln: "), proc.stderr
    return lines[0]


@pytest.fixture
def session(tmp_path: Path) -> str:
    first = kiln("run", "first task", "--root", str(tmp_path), cwd=tmp_path, script=["done"])
    assert first.returncode == 0, first.stderr
    return first.stderr.rsplit("session ", 1)[1].strip()


def _sql(kiln_home: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(kiln_home / "sessions.db") as db:
        db.execute(sql, params)
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the file's bytes are the whole store


def test_a_store_from_a_newer_kiln_is_refused_untouched(
    tmp_path: Path, kiln_home: Path, session: str
) -> None:
    _sql(kiln_home, "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
                    "VALUES ('kiln.sessions', 'm099_from_the_future', 'x')")  # fmt: skip
    before = (kiln_home / "sessions.db").read_bytes()
    for args in (("sessions", "list"), ("run", "more", "--resume", session)):
        line = one_line(kiln(*args, cwd=tmp_path, script=["never"]), 2)
        assert "was written by a newer Kiln (steps m099_from_the_future)" in line
    assert (kiln_home / "sessions.db").read_bytes() == before
    assert not list(kiln_home.glob("sessions.db.corrupt-*"))  # not mistaken for damage


@pytest.mark.parametrize(
    ("sql", "what"),
    [
        ("UPDATE messages SET json = '{torn' WHERE seq = 1", "message 1"),
        ("UPDATE messages SET json = '[1]' WHERE seq = 1", "message 1"),
        ('UPDATE messages SET json = \'{"role": "user"}\' WHERE seq = 1', "message 1"),
        ("UPDATE sessions SET state = 'not json'", "its state"),
    ],
)
def test_a_damaged_session_is_refused_in_one_line(
    tmp_path: Path, kiln_home: Path, session: str, sql: str, what: str
) -> None:
    _sql(kiln_home, sql)
    for args in (
        ("sessions", "show", session),
        ("run", "more", "--resume", session),
        ("context", "show", session),
    ):
        line = one_line(kiln(*args, cwd=tmp_path, script=["never"]), 1)
        assert f"session {session} is damaged: {what}" in line
    fresh = kiln("run", "a new task", "--root", str(tmp_path), cwd=tmp_path, script=["fine"])
    assert fresh.returncode == 0, fresh.stderr


def test_a_truncated_store_is_set_aside_and_the_next_run_works(
    tmp_path: Path, kiln_home: Path, session: str
) -> None:
    store = kiln_home / "sessions.db"
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = store.read_bytes()
    store.write_bytes(data[: len(data) // 2])  # cut mid-page, as a full disk or a crash leaves
    run = kiln("run", "again", "--root", str(tmp_path), cwd=tmp_path, script=["fine"])
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert "the session store was damaged" in run.stderr
    kept = list(kiln_home.glob("sessions.db.corrupt-*"))
    assert [p.read_bytes() for p in kept] == [data[: len(data) // 2]]
    listed = kiln("sessions", "list", "--json", cwd=tmp_path)
    assert [row["title"] for row in json.loads(listed.stdout)] == ["again"]


@pytest.mark.parametrize(
    "schema",
    [
        "CREATE TABLE users (id, name); CREATE TABLE log (msg);",
        "CREATE TABLE sessions (x); CREATE TABLE log (msg);",  # a name the store uses too
    ],
)
def test_another_applications_database_is_refused_untouched(
    tmp_path: Path, kiln_home: Path, schema: str
) -> None:
    """A sessions.db that is another application's database (a KILN_HOME shared with another
    tool) was migrated in place (WAL mode, the store's tables beside its own), or moved aside
    when a table name clashed. It is refused in one line, exit 2, its bytes unchanged, and its
    trigger never fires."""
    store = kiln_home / "sessions.db"
    with sqlite3.connect(store) as db:
        db.executescript(
            schema + "CREATE TRIGGER t AFTER INSERT ON log BEGIN DELETE FROM log; END;"
            "INSERT INTO log VALUES ('kept');"
        )
    before = store.read_bytes()
    for args in (("run", "task", "--root", str(tmp_path)), ("sessions", "list", "--all")):
        line = one_line(kiln(*args, cwd=tmp_path, script=["never"]), 2)
        assert line.startswith(f"kiln: {store} is not Kiln's session store (it holds another")
        assert "log, " in line and "nothing was written to it" in line
    assert store.read_bytes() == before
    assert sorted(p.name for p in kiln_home.iterdir() if p.name.startswith("sessions")) == [
        "sessions.db"
    ]


def test_a_store_that_cannot_be_written_is_refused_not_set_aside(
    tmp_path: Path, kiln_home: Path, session: str
) -> None:
    """A full disk (here: a file-size limit of 0, so every write fails) is not damage: the
    store stays where it is, with every session in it."""
    import resource

    def no_writes() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "sessions", "list", "--all"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, preexec_fn=no_writes,
    )  # fmt: skip
    line = one_line(proc, 1)
    assert line.startswith(f"kiln: cannot open the session store {kiln_home / 'sessions.db'}")
    assert not list(kiln_home.glob("sessions.db.corrupt-*"))
    listed = kiln("sessions", "list", "--all", "--json", cwd=tmp_path)
    assert [row["id"] for row in json.loads(listed.stdout)] == [session]


@pytest.mark.parametrize("replaced_by", ["nothing", "a file"])
def test_resuming_a_session_whose_workspace_is_gone(
    tmp_path: Path, kiln_home: Path, replaced_by: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    first = kiln("run", "first task", "--root", str(ws), cwd=tmp_path, script=["done"])
    session = first.stderr.rsplit("session ", 1)[1].strip()
    ws.rmdir()
    if replaced_by == "a file":
        ws.write_text("not a folder")
    proc = kiln("run", "more", "--resume", session, cwd=tmp_path, script=["never"])
    line = one_line(proc, 2)
    assert f"the workspace of session {session}, {ws}, is not a folder any more" in line
    shown = kiln("sessions", "show", session, "--json", cwd=tmp_path)
    assert "more" not in [
        b.get("text") for m in json.loads(shown.stdout)["messages"] for b in m["content"]
    ]


def test_a_folder_where_the_store_belongs_is_named(tmp_path: Path, kiln_home: Path) -> None:
    """`sessions.db` made a folder (a stray `mkdir -p`): every command said "unable to open
    database file (free disk space, or make KILN_HOME a writable folder)", neither of which
    was the matter; the line says what is there now, and the folder is left alone."""
    (kiln_home / "sessions.db" / "kept").mkdir(parents=True)
    line = one_line(kiln("sessions", "list", cwd=tmp_path), 1)
    assert line.startswith(f"kiln: {kiln_home / 'sessions.db'} is a folder"), line
    assert "free disk space" not in line and (kiln_home / "sessions.db" / "kept").is_dir()
