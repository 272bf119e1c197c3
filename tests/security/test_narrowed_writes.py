"""Writes the check met as any name, now met as what they are (docs/security.md section 3):
`find`'s `{}` lies under its starting points and matches its `-name`/`-path` (before, `find src
-exec sed -i … {} +` was refused under any `Write(…)` deny rule), util-linux's `rename FROM TO
FILE` gives one name it computes, awk's `print ($1 > 5)` compares, `patch -B DIR/` backs up
under DIR. And those that reached past a rule: xargs's input holding `../` in a path it fills,
a link under the folder `find` walks, a perl `rename` expression that moves a file to another
folder, awk's `print "a;b" > FILE`, and a download wget saves as `NAME.1`. Through the real
`kiln run` where the host can run it, else on the permission engine."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent.permission_rules import Rules
from agent.permissions import Permissions
from agent.sandbox import find_backend
from tests.security.scripted_run import one_command

needs_sandbox = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")
PATCH = "--- a/src/main.py\n+++ b/src/main.py\n@@ -1 +1 @@\n-print('hi')\n+print('bye')\n"


def workspace(tmp_path: Path, kiln_home: Path, deny: list[str]) -> Path:
    root = tmp_path / "home" / "proj"
    for folder in ("config", "src", "docs"):
        (root / folder).mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "src" / "notes.txt").write_text("notes\n")
    (root / "docs" / "b.txt").write_text("b\n")
    (root / "nums.txt").write_text("3\n7\n")
    (root / "fix.patch").write_text(PATCH)
    (kiln_home / "settings.json").write_text(json.dumps({"permissions": {"deny": deny}}))
    return root


def run(root: Path, tmp_path: Path, kiln_home: Path, command: str, mode: str) -> str:
    return one_command(root, command, home=root.parent, kiln_home=kiln_home,
                       script=tmp_path / "script.json", mode=mode)[1]  # fmt: skip


@needs_sandbox
@pytest.mark.parametrize(
    ("command", "mode", "changed", "content"),
    [
        ("find src -name '*.py' -exec sed -i 's/hi/bye/' {} +", "yolo", "src/main.py", "bye"),
        ("find src -type f -exec sed -i 's/hi/bye/' {} +", "ci", "src/main.py", "bye"),
        ("find . -path './src/*' -exec sed -i 's/hi/bye/' {} +", "yolo", "src/main.py", "bye"),
        ("rename.ul .txt .md src/notes.txt", "yolo", "src/notes.md", "notes"),
        ("awk '{print ($1 > 5)}' nums.txt > out.txt", "ci", "out.txt", "0\n1\n"),
        ("patch -b -B bak/ -p1 < fix.patch", "ci", "bak/src/main.py", "hi"),
    ],
)
def test_a_write_no_rule_names_runs(
    tmp_path: Path, kiln_home: Path, command: str, mode: str, changed: str, content: str
) -> None:
    """Each was refused before (a deny rule on `config/**` met `{}` or rename's FROM as any
    name; ci did not understand `print ($1 > 5)` or `patch -B`)."""
    root = workspace(tmp_path, kiln_home, ["Write(config/**)", "Bash(rm *)"])
    results = run(root, tmp_path, kiln_home, command, mode)
    assert (root / changed).exists(), results
    assert content in (root / changed).read_text(), results


@needs_sandbox
@pytest.mark.parametrize(
    "command",
    [
        "echo ../config/new.yml | xargs -I{} cp src/main.py src/{}",
        "find src -name cfg -exec cp src/main.py {}/new.yml ';'",
        "find config -name '*.py' -exec touch {}/../new.yml ';'",
        "rename.ul b.txt ../config/new.yml docs/b.txt",
        'awk \'BEGIN{print "a;b" > "config/new.yml"}\'',
        "patch -p1 -B config/ -i fix.patch",
    ],
)
def test_a_write_a_rule_names_is_refused(tmp_path: Path, kiln_home: Path, command: str) -> None:
    """Before, xargs's `../` climbed out of the folder its path named, `src/cfg` (a link to
    `config`) led find's `{}` there, rename's TO moved the file and awk's `;` inside a string hid
    the redirection: each wrote `config/new.yml` in yolo."""
    root = workspace(tmp_path, kiln_home, ["Write(config/**)"])
    os.symlink("../config", root / "src" / "cfg")
    results = run(root, tmp_path, kiln_home, command, "yolo")
    assert not (root / "config" / "new.yml").exists(), results
    assert not (root / "config" / "src").exists(), results
    assert "denied by rule Write(config/**)" in results, results


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("wget -P config https://example.com/app.yml", "Write(config/app.yml.1)"),
        ("cd config && wget https://example.com/app.yml", "Write(config/*.[0-9])"),
        ("curl -O --no-clobber https://example.com/app.yml", "Write(app.yml.2)"),
        ("prename 's{^docs/}{config/}' docs/b.txt", "Write(config/**)"),
        ("find . -name '*.yml' -exec sed -i s/a/b/ {} +", "Write(config/*.yml)"),
        ("find src config -exec sed -i s/a/b/ {} +", "Write(config/**)"),
        ("find src -o -name x -exec sed -i s/a/b/ {} +", "Write(config/**)"),
        ("find src ! -name '*.py' -exec sed -i s/a/b/ {} +", "Write(src/*.yml)"),
    ],
)
def test_names_a_program_makes_meet_the_deny_rules(tmp_path: Path, command: str, rule: str) -> None:
    """wget saves `NAME.1` when NAME is there (curl too with `--no-clobber`); a perl rename
    expression rewrites the whole path; find's filters narrow `{}` only when they must hold."""
    for folder in ("config", "docs", "src"):
        (tmp_path / folder).mkdir()
    check = Permissions("yolo", Rules(deny=[rule]), root=tmp_path).check(
        "run_command", {"command": command}
    )
    assert check.verdict == "deny", check
    assert rule in check.reason


@pytest.mark.parametrize(
    "command",
    [
        "find . -name '*.py' -exec sed -i s/a/b/ {} +",
        "find src -type f -exec sed -i s/a/b/ {} +",
        "rename.ul .yml .yaml src/a.yml",
        "prename 's/\\.txt$/.md/' docs/b.txt",
    ],
)
def test_names_no_rule_covers_pass(tmp_path: Path, command: str) -> None:
    for folder in ("config", "docs", "src"):
        (tmp_path / folder).mkdir()
    check = Permissions("yolo", Rules(deny=["Write(config/*.yml)"]), root=tmp_path).check(
        "run_command", {"command": command}
    )
    assert check.verdict == "allow", check
