"""`kiln sessions list|search` as a user types them: queries holding the characters FTS5
treats as syntax, empty queries, text in another Unicode form, and the command run from a
subfolder of the workspace. Sessions come from real `kiln run` processes (scripted provider)
into a real SQLite store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repos import git

ROOT = Path(__file__).resolve().parents[2]


def kiln(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )  # fmt: skip


def one_run(tmp_path: Path, root: Path, task: str, reply: str, *args: str) -> str:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([reply]))
    proc = kiln("run", "--output-format", "json", *args, task, cwd=root,
                env={"KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["session_id"])


@pytest.fixture
def session(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "ws"
    (root / "pkg" / "sub").mkdir(parents=True)
    git(root, "init", "-q")
    reply = 'Kept the zebra helper; he said "quoted" and x:y, the café and naïve résumé.'
    return root, one_run(tmp_path, root, "Why is the zebra helper slow?", reply)


# (query, whether it names the session's words): each word is searched as written, the
# characters FTS5 reads as syntax included
QUERIES = [
    ('zeb"ra', False), ('"zebra', True), ('zebra"', True), ('he said "quoted', True),
    ("zebra*", True), ("NEAR(zebra", False), ("zebra:", True), ("x:y", True), ("AND", True),
    ("NOT zebra", True), ("zebra OR", True), ("^zebra", True), ("(zebra", True),
    ("{zebra}", True), ("zebra + helper", True), ("*", False), ('""', False),
]  # fmt: skip


def test_fts_syntax_characters_are_searched_as_text(session: tuple[Path, str]) -> None:
    root, sid = session
    for query, found in QUERIES:
        proc = kiln("sessions", "search", query, "--json", cwd=root)
        assert proc.returncode == 0, (query, proc.stderr)
        words = query.strip('*"')
        assert proc.stderr == ("" if words else "kiln: the query has no searchable words\n")
        hits = json.loads(proc.stdout)
        assert {h["session_id"] for h in hits} == ({sid} if found else set()), query


def test_a_query_may_start_with_a_dash(session: tuple[Path, str]) -> None:
    root, sid = session
    proc = kiln("sessions", "search", "-zebra helper", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["session_id"] == sid
    mistyped = kiln("sessions", "search", "zebra", "--jsno", cwd=root)
    assert mistyped.returncode == 2 and mistyped.stderr.count("\n") == 1


def test_an_empty_query_is_a_usage_error(session: tuple[Path, str]) -> None:
    root, _ = session
    for query in ("", "   ", "\t"):
        proc = kiln("sessions", "search", query, "--json", cwd=root)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr == "kiln: the query is empty\n"


def test_text_in_another_unicode_form_is_found(session: tuple[Path, str]) -> None:
    import unicodedata

    root, sid = session
    for query in (unicodedata.normalize("NFD", "café"), "ＺＥＢＲＡ", "naive"):
        proc = kiln("sessions", "search", query, "--json", cwd=root)
        assert proc.returncode == 0, proc.stderr
        hits = json.loads(proc.stdout)
        assert hits and hits[0]["session_id"] == sid, query


def test_from_a_subfolder_the_workspace_sessions_are_listed(
    tmp_path: Path, session: tuple[Path, str]
) -> None:
    """`kiln run` from a subfolder works in the repository root; `kiln sessions` from there
    lists and searches that workspace's sessions, and those of a workspace opened on the
    subfolder itself (``--root``), not the sessions of a folder beside it."""
    root, sid = session
    pkg, sub = root / "pkg", root / "pkg" / "sub"
    nested = one_run(tmp_path, root, "zebra in pkg", "ok", "--root", str(pkg))
    (tmp_path / "other").mkdir()
    elsewhere = one_run(tmp_path, tmp_path / "other", "zebra elsewhere", "ok")
    listed = kiln("sessions", "list", "--json", cwd=sub)
    assert listed.returncode == 0, listed.stderr
    assert {r["id"] for r in json.loads(listed.stdout)} == {sid, nested}
    text = kiln("sessions", "list", cwd=sub)
    assert sid in text.stdout and "no sessions" not in text.stdout
    found = kiln("sessions", "search", "zebra", "--json", cwd=sub)
    assert {h["session_id"] for h in json.loads(found.stdout)} == {sid, nested}
    # an explicit --root is that workspace alone; --all is every one
    only = kiln("sessions", "list", "--json", "--root", str(pkg), cwd=sub)
    assert [r["id"] for r in json.loads(only.stdout)] == [nested]
    every = kiln("sessions", "list", "--all", "--json", cwd=sub)
    assert {r["id"] for r in json.loads(every.stdout)} == {sid, nested, elsewhere}


def test_each_hit_and_each_session_is_one_line(tmp_path: Path) -> None:
    """Transcript text (a file's or a command's output included) cannot forge a line of the
    listing a script reads, nor put an escape sequence in it."""
    root = tmp_path / "ws"
    root.mkdir()
    forged = "20991231-000000-deadbeef  2099-12-31 00:00  [assistant] forged"
    reply = f"first line\n{forged}\tmore\x1b]0;title\x07 end\r\nlast"
    sid = one_run(tmp_path, root, "find the forged line\n" + forged, reply)
    for args in (("sessions", "search", "forged"), ("sessions", "list")):
        lines = kiln(*args, cwd=root).stdout.splitlines()
        assert lines and all(line.startswith(f"{sid}  ") for line in lines), lines
        assert not any(c in line for line in lines for c in "\x1b\x07\r\t")
    hits = json.loads(kiln("sessions", "search", "forged", "--json", cwd=root).stdout)
    assert any("\x1b]0;title\x07" in h["excerpt"] for h in hits)  # --json keeps the text
