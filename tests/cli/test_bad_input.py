"""Bad input and a hostile environment, through the real `kiln` process: each gets one line on
stderr and a non-zero exit, never a traceback, and leaves nothing half-written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def kiln(*args: str | bytes, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60):
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def one_line(proc: subprocess.CompletedProcess, code: int | None) -> str:
    """The single ``kiln: …`` line a failure prints; asserts the exit code (``None``: any but
    0) and no traceback."""
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == code if code is not None else proc.returncode > 0, err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("kiln: "), err
    return lines[0]


def test_an_argument_that_is_not_utf8_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    line = one_line(kiln("memory", "add", b"note \xff", "--root", str(tmp_path), cwd=tmp_path), 2)
    assert "not valid UTF-8" in line
    assert list(tmp_path.iterdir()) == []  # no KILN.md, no temporary file beside it


@pytest.mark.parametrize("args", [("sessions", "list"), ("memory", "show"), ("mcp", "list")])
def test_kiln_home_that_is_a_file(tmp_path: Path, args: tuple[str, ...]) -> None:
    """`kiln mcp list` called it "not valid JSON" and `kiln memory show` said to "fix or delete
    the settings file" (neither exists); each names the file in the folder's place now."""
    home = tmp_path / "home"
    home.write_text("not a folder")
    proc = kiln(*args, cwd=tmp_path, env={"KILN_HOME": str(home)})
    line = one_line(proc, None)
    assert f"{home}: a file is there, not a folder" in line or f"{home} is a file" in line, line
    assert "JSON" not in line and "delete the settings" not in line, line
    assert home.read_text() == "not a folder"


def test_a_folder_where_the_memory_file_belongs(tmp_path: Path, kiln_home: Path) -> None:
    (kiln_home / "KILN.md").mkdir()  # fails for root too, unlike chmod 000
    line = one_line(kiln("memory", "add", "a note", "--user", cwd=tmp_path), None)
    assert str(kiln_home / "KILN.md") in line and "Is a directory" in line
    assert list((kiln_home / "KILN.md").iterdir()) == []


def test_a_bad_index_busy_timeout_names_the_variable(tmp_path: Path) -> None:
    for value in ("abc", "nan", "-1"):
        proc = kiln("index", str(tmp_path), cwd=tmp_path, env={"KILN_INDEX_BUSY_TIMEOUT": value})
        assert "KILN_INDEX_BUSY_TIMEOUT" in one_line(proc, 2)
    assert not (tmp_path / ".kiln").exists()


@pytest.mark.parametrize(
    "option", [["--max-patch-mb", "nan"], ["--max-patch-mb", "inf"], ["--max-cost-usd", "nan"],
               ["--max-minutes", "nan"]],
)  # fmt: skip
def test_run_limits_must_be_finite(tmp_path: Path, kiln_home: Path, option: list[str]) -> None:
    proc = kiln("run", "do it", "--root", str(tmp_path), *option, cwd=tmp_path)
    assert "is not a finite number" in one_line(proc, 2)
    assert not (kiln_home / "sessions.db").exists()  # refused before any session began


def test_an_unknown_provider_names_where_it_came_from(tmp_path: Path, kiln_home: Path) -> None:
    """`--provider nope` said "KILN_PROVIDER must be one of …", sending the user to a variable
    they never set."""
    flag = one_line(kiln("run", "hi", "--provider", "nope", cwd=tmp_path), 2)
    assert "unknown provider 'nope' (the provider must be one of: " in flag, flag
    env = one_line(kiln("run", "hi", cwd=tmp_path, env={"KILN_PROVIDER": "nope"}), 2)
    assert "(KILN_PROVIDER must be one of: " in env, env
    assert not (kiln_home / "sessions.db").exists()


def test_a_task_file_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "task.txt").write_bytes(b"fix \xff\xfe it")
    proc = kiln("run", "--task-file", "task.txt", "--root", str(tmp_path), cwd=tmp_path)
    assert "--task-file task.txt is not UTF-8 text" in one_line(proc, 2)


@pytest.mark.parametrize(
    "option", ["--resume", "--provider", "--model", "--verify", "--commit-branch"]
)
def test_empty_option_values_are_refused(tmp_path: Path, kiln_home: Path, option: str) -> None:
    """`--verify "$VERIFY"` with the variable unset ran unverified (exit 10, not 0 or 12) and
    `--commit-branch ""` made no branch, both without a word."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    env = {"KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    proc = kiln("run", "--ci", "do it", "--root", str(tmp_path), f"{option}=", cwd=tmp_path,
                env=env)  # fmt: skip
    assert f"{option} is empty" in one_line(proc, 2)  # not a new session, not the default model
    assert not (kiln_home / "sessions.db").exists()


def test_an_artifacts_folder_that_cannot_be_made_fails_before_the_run(
    tmp_path: Path, kiln_home: Path
) -> None:
    (tmp_path / "file").write_text("x")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    env = {"KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    args = ("run", "--ci", "do it", "--root", str(tmp_path), "--artifacts",
            str(tmp_path / "file" / "out"))  # fmt: skip
    line = one_line(kiln(*args, cwd=tmp_path, env=env), 2)
    assert "cannot create the artifacts folder" in line and "Not a directory" in line
    assert not (kiln_home / "sessions.db").exists()  # the model was never called


def test_an_unbalanced_editor_command(tmp_path: Path) -> None:
    proc = kiln("memory", "edit", "--root", str(tmp_path), cwd=tmp_path, env={"VISUAL": 'vi "'})
    assert "VISUAL" in one_line(proc, 2)


def test_a_bug_is_one_line_and_the_traceback_is_kept(tmp_path: Path) -> None:
    """A failure nobody foresaw still ends in one line; the traceback goes to a file it names."""
    boom = tmp_path / "boom_cmd.py"
    boom.write_text(
        "import click\n\n@click.command()\ndef cmd():\n    raise RuntimeError('unforeseen')\n"
    )
    code = (
        "import sys; from lsp_server.cli import main, register_command; "
        "register_command('boom', 'boom_cmd:cmd'); sys.exit(main(['boom']))"
    )
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]), "TMPDIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env},
        timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("kiln: internal error: RuntimeError: unforeseen (traceback in ")
    saved = Path(proc.stderr.split("traceback in ", 1)[1].split(";", 1)[0])
    assert saved.parent == tmp_path and "raise RuntimeError('unforeseen')" in saved.read_text()


def test_a_settings_key_given_twice_is_refused(tmp_path: Path, kiln_home: Path) -> None:
    """Parsers disagree on which duplicate wins: the deny rule must not vanish silently."""
    (kiln_home / "settings.json").write_text(
        '{"permissions": {"deny": ["edit_file(secrets/**)"]}, "permissions": {}}'
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    env = {"KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    proc = kiln("run", "do it", "--root", str(tmp_path), cwd=tmp_path, env=env)
    assert "the key 'permissions' appears twice" in one_line(proc, 2)


@pytest.mark.parametrize("kind", ["fifo", "huge"])
def test_skills_commands_read_settings_without_hanging(
    tmp_path: Path, kiln_home: Path, kind: str
) -> None:
    settings = kiln_home / "settings.json"
    if kind == "fifo":
        os.mkfifo(settings)  # open() would wait for a writer forever
    else:
        with settings.open("wb") as fh:
            fh.truncate(1 << 30)  # 1 GB, sparse
    args = ("skills", "install", "acme/tool", "-y", "--root", str(tmp_path))
    proc = kiln(*args, cwd=tmp_path, env={"KILN_REGISTRY": ""})  # the settings name it
    line = one_line(proc, 2)
    assert f"cannot read {settings}" in line
    assert "not a regular file" in line if kind == "fifo" else "larger than 1 MB" in line
    assert not (tmp_path / ".kiln").exists() and not (tmp_path / "skills-lock.json").exists()


def test_a_file_name_that_is_not_utf8_does_not_break_a_turn(
    tmp_path: Path, kiln_home: Path
) -> None:
    """Python reads such a name as lone surrogates, which SQLite and JSON refuse; the turn goes
    on and the stored result spells the byte as \\xff."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "plain.py").write_text("x = 1\n")
    with open(os.path.join(os.fsencode(ws), b"caf\xe9.txt"), "w") as fh:
        fh.write("latin-1 name\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "list_files", "input": {}}]}, "ok"]))
    env = {"KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    proc = kiln("run", "list", "--root", str(ws), "--mode", "yolo", cwd=tmp_path, env=env)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
    session_id = proc.stderr.decode().rsplit("session ", 1)[1].strip()
    shown = kiln("sessions", "show", session_id, "--json", cwd=tmp_path)
    results = [
        block["content"]
        for message in json.loads(shown.stdout)["messages"]
        for block in message["content"]
        if block["type"] == "tool_result"
    ]
    assert len(results) == 1 and "caf\\xe9.txt" in str(results[0]) and "plain.py" in str(results[0])


@pytest.mark.parametrize("query", ["", "   ", "\n"])
def test_an_empty_search_query_is_a_usage_error(tmp_path: Path, query: str) -> None:
    proc = kiln("search", query, "--root", str(tmp_path), cwd=tmp_path)
    assert one_line(proc, 2) == "kiln: the query is empty"
    assert not (tmp_path / ".kiln").exists()  # refused before an index was built


GONE_CWD_COMMANDS = [("sessions", "list"), ("context", "show"), ("memory", "show"), ("mcp", "list"), ("index",), ("run", "hi")]  # fmt: skip


@pytest.mark.parametrize("args", GONE_CWD_COMMANDS)
def test_a_current_folder_that_was_removed_is_named(tmp_path: Path, args: tuple[str, ...]) -> None:
    """A shell left in a folder another terminal removed (a worktree removed, a temporary
    checkout cleaned up): every command said only "kiln: No such file or directory"."""
    gone = tmp_path / "gone"
    gone.mkdir()

    def leave_it_removed() -> None:
        os.chdir(gone)
        os.rmdir(gone)

    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", *args], capture_output=True, timeout=60,
        preexec_fn=leave_it_removed, env={**os.environ, "KILN_PROVIDER": "scripted"},
    )  # fmt: skip
    line = one_line(proc, 1)
    assert "the current folder no longer exists" in line, line


def test_a_file_where_a_state_folder_belongs_is_named(tmp_path: Path, kiln_home: Path) -> None:
    """`$KILN_HOME/sessions` (the sessions' folders) made a file by a stray command: a run said
    "cannot use …/sessions/ID: Not a directory", naming a path that does not exist."""
    (kiln_home / "sessions").write_text("stray")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    env = {"KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    line = one_line(kiln("run", "hi", cwd=tmp_path, env=env), 1)
    assert f"{kiln_home / 'sessions'} is a file, not a folder" in line, line
    assert (kiln_home / "sessions").read_text() == "stray"


def test_a_task_or_query_that_is_not_utf8_is_refused_before_anything_is_stored(
    tmp_path: Path, kiln_home: Path
) -> None:
    """A task typed in a Latin-1 terminal: `kiln run` made the session, then failed on storing
    its title, leaving an empty session that `kiln sessions list` shows and that makes a prefix
    of its id ambiguous; `--resume` took the same task, and `kiln search` searched for the words
    around the byte while `kiln sessions search` refused it."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done", "done"]))
    env = {"KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    first = kiln("run", "first task", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    session = first.stderr.decode().rsplit("session ", 1)[1].strip()

    def stored() -> list:
        listed = kiln("sessions", "list", "--all", "--json", cwd=tmp_path)
        shown = kiln("sessions", "show", session, "--json", cwd=tmp_path)
        return [json.loads(listed.stdout), json.loads(shown.stdout)["messages"]]

    before = stored()
    for args in (("run", b"fix caf\xe9"), ("run", "--resume", session, b"more caf\xe9")):
        line = one_line(kiln(*args, cwd=tmp_path, env=env), 2)
        assert line == "kiln: an argument or environment value is not valid UTF-8 text ('\\udce9')"
    assert stored() == before
    (tmp_path / "calc.py").write_text("def cafe():\n    pass\n")
    line = one_line(kiln("search", b"cafe \xe9", "--root", str(tmp_path), cwd=tmp_path), 2)
    assert "not valid UTF-8" in line


def test_a_failure_naming_a_path_with_a_new_line_is_one_line(tmp_path: Path) -> None:
    """`kiln run --ci` in `plain\\ndir` (no checkout) printed the path as it is, the failure
    in two lines: a log reader that takes the last line got half a path."""
    folder = tmp_path / "plain\ndir"
    folder.mkdir()
    line = one_line(kiln("run", "--ci", "hi", "--root", str(folder), cwd=tmp_path), 2)
    assert (
        line
        == f"kiln: {tmp_path}/plain\\ndir is not a git checkout (--ci needs a git working tree to diff against)"
    )
    assert list(tmp_path.iterdir()) == [folder]  # nothing written


@pytest.mark.parametrize("kind", ["missing", "folder", "latin-1", "unknown error kind"])
def test_a_script_file_that_cannot_be_read_is_bad_configuration(tmp_path: Path, kind: str) -> None:
    """KILN_SCRIPT naming a folder ended in an internal error (exit 1, a traceback file); like
    a missing one, it is one line naming it, exit 2, and no session is made."""
    script = tmp_path / "script.json"
    if kind == "folder":
        script.mkdir()
    elif kind == "latin-1":
        script.write_bytes('["caf\xe9"]'.encode("latin-1"))
    elif kind == "unknown error kind":  # found at the first call, it left an unused session
        script.write_text('[{"raise": "provider_error"}]')
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    line = one_line(kiln("run", "go", cwd=ws, env=env), 2)
    assert str(script) in line, line
    listed = kiln("sessions", "list", "--json", cwd=ws)
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stderr


def test_a_run_the_provider_failed_at_once_keeps_its_session(tmp_path: Path) -> None:
    """docs/ci.md: a run that never got a reply (exit 4) keeps its session, titled with the
    task: its folder holds the report and transcript, and `--resume ID TASK` goes on there."""
    script = tmp_path / "script.json"
    script.write_text('[{"raise": "bad_request"}]')
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    proc = kiln("run", "--output-format", "json", "Fix the date test", cwd=ws, env=env)
    assert proc.returncode == 4, proc.stderr
    result = json.loads(proc.stdout)
    listed = json.loads(kiln("sessions", "list", "--json", cwd=ws).stdout)
    assert [(s["id"], s["title"]) for s in listed] == [(result["session_id"], "Fix the date test")]
    assert Path(result["transcript"]).is_file()
    script.write_text('["the date test passes now"]')  # the provider works again
    again = kiln("run", "--output-format", "json", "--resume", result["session_id"],
                 "Fix the date test", cwd=ws, env=env)  # fmt: skip
    assert again.returncode == 0, again.stderr
    resumed = json.loads(again.stdout)
    assert resumed["session_id"] == result["session_id"]
    assert resumed["result"] == "the date test passes now"
