"""Bash expands a literal-looking word before the command sees it, and the check read the word as
written (docs/security.md section 3). Each line below ran through the real `kiln run --mode ci`
although the user's settings deny `rm` and writes to `config/*.yml`: brace expansion made
`r{m,} -rf src` the command `rm r -rf src` and `config/{a.yml.example,new.yml}` two operands of
`cp`; `config/new.y{m..m}l` and `~+/config/new.yml` (the current folder) were other paths to the
rules than the file written; `cp x $F` wrote a path the shell computes as if `$F` were its name;
and the `*` of `tar -cf /dev/null *` became the options of two files the checkout ships,
`--checkpoint=1` and `--checkpoint-action=exec=rm -rf src`, which ran `rm`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent.permission_rules import Rules
from agent.permissions import Permissions
from agent.sandbox import find_backend
from agent.shell_parse import parse_command
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

DENY = ["Bash(rm *)", "Write(config/*.yml)"]
REMOVES_SRC = [
    "r{m,} -rf src",
    "tar -cf /dev/null *",
]
WRITES_CONFIG = [
    "echo 'debug: true' > config/new.y{m..m}l",
    "echo 'debug: true' > ~+/config/new.yml",
    "cp config/{app.yml.example,new.yml}",
    "F=config/new.yml; cp config/app.yml.example $F",
    "dd if=config/app.yml.example of=~+/config/new.yml",
]
SHIPPED = ["--checkpoint=1", "--checkpoint-action=exec=rm -rf src"]


def checkout(tmp_path: Path, kiln_home: Path) -> tuple[Path, Path]:
    """A repository whose author named two files as tar options."""
    home = tmp_path / "home"
    root = home / "proj"
    (root / "src").mkdir(parents=True)
    (root / "config").mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "config" / "app.yml.example").write_text("debug: false\n")
    for name in SHIPPED:
        (root / name).write_text("")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    (kiln_home / "settings.json").write_text(json.dumps({"permissions": {"deny": DENY}}))
    return home, root


def run(tmp_path: Path, kiln_home: Path, home: Path, root: Path, command: str) -> str:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(
        [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "done"]
    ))  # fmt: skip
    proc = kiln_run(
        root, home=home, kiln_home=kiln_home, script=script, mode="ci", output="stream-json"
    )
    return " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))


needs_bwrap = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


@needs_bwrap
@pytest.mark.parametrize("command", REMOVES_SRC)
def test_an_expanded_rm_is_still_refused(tmp_path: Path, kiln_home: Path, command: str) -> None:
    home, root = checkout(tmp_path, kiln_home)
    results = run(tmp_path, kiln_home, home, root, command)
    assert (root / "src" / "main.py").exists(), results
    assert "permission denied" in results, results


@needs_bwrap
@pytest.mark.parametrize("command", WRITES_CONFIG)
def test_an_expanded_path_meets_the_deny_rule(
    tmp_path: Path, kiln_home: Path, command: str
) -> None:
    home, root = checkout(tmp_path, kiln_home)
    results = run(tmp_path, kiln_home, home, root, command)
    assert not (root / "config" / "new.yml").exists(), results
    assert "permission denied" in results, results


@pytest.mark.parametrize(
    "word",
    ["r{m,}", "{a,b}{c,d}", "{a,{b,c}}", "{a{b,c}}", "{1..3}", "{01..10..3}", "{a..e..2}",
     "{5..1}", "{,a}", "''{,a}", "{a,'b,c'}", "\\{a,b\\}", "x{}y", "{a}", "a{b,c", "{-2..2}",
     "K'I'{L..L}N.md", '"a\\"b"', "{-c,alias.x=!rm\\ -rf\\ src}"],
)  # fmt: skip
def test_words_are_what_bash_passes_on(tmp_path: Path, word: str) -> None:
    printed = subprocess.run(
        ["bash", "-c", f"printf '%s\\n' {word}"], cwd=tmp_path, capture_output=True, text=True
    ).stdout.splitlines()
    parsed = parse_command(f"printf '%s\\n' {word}")
    assert list(parsed.commands[0].argv[2:]) == printed


def test_a_pattern_written_is_each_file_it_names(tmp_path: Path) -> None:
    """`> K*` and `sed -i … *.md` write `KILN.md` when it is there (refused in `ci`, asked
    otherwise), and a glob meets a deny rule by the files it names."""
    (tmp_path / "KILN.md").write_text("notes\n")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "app.yml").write_text("x\n")
    ci = Permissions("ci", Rules(deny=["Write(config/app.yml)"]), tmp_path)
    for line in ("echo x > K*", "sed -i s/a/b/ *.md", "mv *.md docs/"):
        assert ci.check("run_command", {"command": line}).verdict == "deny", line
    for line in ("echo x > config/a?p.yml", "cp /dev/null config/*.yml"):
        check = ci.check("run_command", {"command": line})
        assert "denied by rule Write(config/app.yml)" in check.reason, line
    for line in ("sed -i s/a/b/ src/*.py", "sed -i s/a/b/ -- *.py", "tar -cf /tmp/x.tar -- *"):
        assert ci.check("run_command", {"command": line}).verdict == "allow", line
