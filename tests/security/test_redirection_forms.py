"""Redirections the bundled shell grammar misreads (docs/security.md section 3): `N<>FILE`, a
descriptor `0` or `{NAME}` glued to its operator, and words after a redirection, which the
grammar puts inside it. Before, each hid a write or a whole command from the check, and yolo
(or ci) ran it past a deny rule. Through the real `kiln run`, and on the parser for the forms
that write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.permission_rules import Rules
from agent.permissions import Permissions
from agent.sandbox import find_backend
from agent.shell_parse import parse_command
from tests.security.scripted_run import one_command

needs_sandbox = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")
RULES = ["Write(config/*.yml)", "Bash(rm *)"]


def workspace(tmp_path: Path, kiln_home: Path) -> Path:
    root = tmp_path / "home" / "proj"
    (root / "config").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n")
    (kiln_home / "settings.json").write_text(json.dumps({"permissions": {"deny": RULES}}))
    return root


@needs_sandbox
@pytest.mark.parametrize("mode", ["yolo", "ci"])
@pytest.mark.parametrize(
    "command",
    [
        "exec 3<>config/new.yml; echo planted >&3",
        "echo planted 1<>config/new.yml",
        "cat src/main.py 0<>config/new.yml > /dev/null; echo planted > /dev/stdin 0<>config/new.yml",
        "cp src/main.py config/new.yml 0</dev/null",
        "cp src/main.py 2>/dev/null config/new.yml",
        "cp src/main.py >&2 config/new.yml",
        "cp src/main.py <<EOF config/new.yml\nx\nEOF",
    ],
)
def test_a_misread_redirection_does_not_hide_a_write(
    tmp_path: Path, kiln_home: Path, command: str, mode: str
) -> None:
    root = workspace(tmp_path, kiln_home)
    results = one_command(root, command, home=root.parent, kiln_home=kiln_home,
                          script=tmp_path / "script.json", mode=mode)[1]  # fmt: skip
    assert not (root / "config" / "new.yml").exists(), results
    assert "denied by rule Write(config/*.yml)" in results, results


@needs_sandbox
@pytest.mark.parametrize("mode", ["yolo", "ci"])
def test_words_after_a_redirection_still_run_a_shell_script(
    tmp_path: Path, kiln_home: Path, mode: str
) -> None:
    """`sh 2>/dev/null -c 'rm -rf src'` was a bare `sh` to the check."""
    root = workspace(tmp_path, kiln_home)
    results = one_command(root, "sh 2>/dev/null -c 'rm -rf src'", home=root.parent,
                          kiln_home=kiln_home, script=tmp_path / "script.json", mode=mode)[1]  # fmt: skip
    assert (root / "src" / "main.py").exists(), results
    assert "denied by rule Bash(rm *)" in results, results


def test_a_named_descriptor_sets_its_variable(tmp_path: Path) -> None:
    """`{BASH_ENV}>F` sets BASH_ENV to the descriptor's number: a file `10` of the workspace
    becomes the start-up file of every `bash` after it, as `BASH_ENV=10` would."""
    parsed = parse_command("exec {BASH_ENV}>/dev/null; export BASH_ENV; bash -c true")
    assert any("BASH_ENV" in why for why in parsed.opaque), parsed.opaque
    check = Permissions("ci", Rules(), root=tmp_path).check(
        "run_command", {"command": "exec {BASH_ENV}>/dev/null; export BASH_ENV; bash -c true"}
    )
    assert check.verdict == "deny", check


@pytest.mark.parametrize(
    ("line", "written"),
    [
        ("cat <<< config/x", []),
        ("cat <&3 3<src/a", []),
        ("echo x >&-", []),
        ("echo x 3>&-", []),
        ("echo x > >(tee log)", ["log"]),
        ("make 2> >(tee err.log >&2)", ["err.log"]),
        ("exec {fd}>out.txt", ["out.txt"]),
        ("echo x >| out.txt", ["out.txt"]),
        ("echo x &>> out.txt", ["out.txt"]),
        ("exec > out.txt", ["out.txt"]),
        ("cat 0<>rw.txt", ["rw.txt"]),
        ("echo hi 3&>out.txt", ["out.txt"]),
    ],
)
def test_what_each_redirection_writes(line: str, written: list[str]) -> None:
    """Here-strings, descriptor copies and closes write nothing; a process substitution as a
    redirection's target is a pipe (before, a computed path, and ci refused `make 2> >(tee
    err.log >&2)`); `>|`, `&>>`, `exec >F`, `{fd}>F` and `<>` write their file."""
    parsed = parse_command(line)
    assert parsed.understood, parsed.opaque
    assert sorted(set(parsed.writes) - {"/dev/null"}) == written
    assert all(c.argv[-1:] != ("{fd}",) for c in parsed.commands)
    if line.startswith("echo hi 3&>"):  # bash passes `3` to echo here: no descriptor
        assert parsed.commands[0].argv == ("echo", "hi", "3")
