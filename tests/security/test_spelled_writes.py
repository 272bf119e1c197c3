"""Writes and commands spelled in ways a model writes them that went past a deny rule
(docs/security.md section 3): `$'…'` quoting, a path the shell computes (a variable set
earlier in the line, a `for` variable, `$PWD`), `cmake -E` (its `env`, `chdir` and `time` run a
command; `copy`, `rm`, `touch`… act as `cp`, `rm`, `touch`), `sponge`, `shred`, and git's
`rm`, `checkout -- F`, `restore` and `clean`; the literal text of `eval` and `trap` (yolo runs
a line not understood); a command line in any word of `parallel`, `tmux` or `screen`; the
folder an archive the check cannot read (it is made in the same line) unpacks into; a symbolic
link the line makes, written through. Before, each wrote `config/new.yml` or ran `rm`
past the rule in yolo (most in ci too). Through the real `kiln run`, and on the permission
engine for programs this host may lack."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent.permission_rules import Rules
from agent.permissions import Permissions
from agent.sandbox import find_backend
from tests.security.scripted_run import one_command

needs_sandbox = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")
needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
RULES = ["Write(config/*.yml)", "Bash(rm *)"]


def workspace(tmp_path: Path, kiln_home: Path) -> Path:
    root = tmp_path / "home" / "proj"
    (root / "config").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n")
    (kiln_home / "settings.json").write_text(json.dumps({"permissions": {"deny": RULES}}))
    return root


def run(root: Path, tmp_path: Path, kiln_home: Path, command: str, mode: str) -> str:
    return one_command(root, command, home=root.parent, kiln_home=kiln_home,
                       script=tmp_path / "script.json", mode=mode)[1]  # fmt: skip


@needs_sandbox
@pytest.mark.parametrize(
    "command",
    [
        "cp src/main.py $'config/new.yml'",
        "cp src/main.py $'con\\x66ig/new.yml'",
        "D=config; cp src/main.py $D/new.yml",
        'for f in config/new.yml; do cp src/main.py "$f"; done',
        'cp src/main.py "$PWD/config/new.yml"',
        "f=config/new.yml; echo planted > $f",
        "eval 'cp src/main.py config/new.yml'",
        "cp src/main.py new.yml && tar cf new.tar new.yml && tar xf new.tar -C config",
        "ln -s config c && cp src/main.py c/new.yml",
        "ln -s config/new.yml n && echo planted > n",
        pytest.param("cmake -E copy src/main.py config/new.yml", marks=needs_cmake),
        pytest.param("cmake -E chdir config cmake -E touch new.yml", marks=needs_cmake),
    ],
)
def test_a_spelled_write_meets_the_deny_rule(tmp_path: Path, kiln_home: Path, command: str) -> None:
    root = workspace(tmp_path, kiln_home)
    results = run(root, tmp_path, kiln_home, command, "yolo")
    assert not (root / "config" / "new.yml").exists(), results
    assert "denied by rule Write(config/*.yml)" in results, results


@needs_sandbox
@pytest.mark.parametrize("mode", ["yolo", "ci"])
@pytest.mark.parametrize(
    "command",
    [
        pytest.param("cmake -E env rm -rf src", marks=needs_cmake),
        pytest.param("cmake -E chdir . rm -rf src", marks=needs_cmake),
        pytest.param("cmake -E rm -rf src", marks=needs_cmake),
        "eval 'rm -rf src'",
        "trap 'rm -rf src' EXIT",
    ],
)
def test_no_rm_runs_past_the_deny_rule(
    tmp_path: Path, kiln_home: Path, command: str, mode: str
) -> None:
    root = workspace(tmp_path, kiln_home)
    results = run(root, tmp_path, kiln_home, command, mode)
    assert (root / "src" / "main.py").exists(), results
    assert "denied by rule Bash(rm *)" in results, results


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("echo x | sponge config/app.yml", "Write(config/**)"),
        ("shred -u -n 1 config/app.yml", "Write(config/**)"),
        ("git rm -q config/app.yml", "Write(config/**)"),
        ("git checkout HEAD -- config/app.yml", "Write(config/**)"),
        ("git restore --source=HEAD~1 config/app.yml", "Write(config/**)"),
        ("git clean -fdx", "Write(config/**)"),
        ('echo hi > "$OUT"', "Write(config/**)"),
        ("parallel rm ::: src", "Bash(rm *)"),
        ("tmux new -d 'rm -rf src'", "Bash(rm *)"),
        ("screen -dm rm -rf src", "Bash(rm *)"),
        ("D=src; cp x $D/a.yml; D=config", "Write(config/**)"),
        ("rm config/app.yml", "Write(config/*.yml)"),
        ("rm -rf config", "Write(config/*.yml)"),
        ("unlink config/app.yml", "Write(config/*.yml)"),
        ("read D < f; cp x $D/a.yml", "Write(config/**)"),
        ('for f in src/*.py; do cp x "$f.bak"; done', "Write(src/a.py.bak)"),
    ],
)
def test_a_program_that_writes_its_operand_meets_the_deny_rule(
    tmp_path: Path, command: str, rule: str
) -> None:
    (tmp_path / "config").mkdir()
    check = Permissions("yolo", Rules(deny=[rule]), root=tmp_path).check(
        "run_command", {"command": command}
    )
    assert check.verdict == "deny", check


@pytest.mark.parametrize(
    "command",
    [
        "git rm --cached config/app.yml",
        "git restore --staged config/app.yml",
        "git clean -n",
        "git checkout -b feature",
        "cmake -E make_directory build",
        "cmake --build build",
        "echo x | sponge src/a.py",
        "rm -rf build src/a.pyc",
        'tmp=$(mktemp) && echo x > "$tmp"',
        "out=build/log.txt; echo x > $out",
        'for f in src/*.py; do sed s/a/b/ "$f" > "$f.bak"; done',
    ],
)
def test_what_writes_no_denied_file_runs(tmp_path: Path, command: str) -> None:
    check = Permissions("yolo", Rules(deny=["Write(config/**)"]), root=tmp_path).check(
        "run_command", {"command": command}
    )
    assert check.verdict == "allow", check
