"""Deny rules reach the sandbox (docs/security.md section 3): through the real `kiln run`, a
command the rules cannot see into (an interpreter) finds the paths of a `read` deny rule hidden and
those of a `write` deny rule read-only, while other workspace files stay readable and writable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.sandbox import find_backend

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap"),
]

PROBE = """
import pathlib
out = []
for name in ("secrets/key.txt", "open.txt"):
    try:
        out.append(name + "=" + pathlib.Path(name).read_text().strip())
    except OSError as e:
        out.append(name + "!" + type(e).__name__)
for name in ("locked/f.txt", "free.txt"):
    try:
        pathlib.Path(name).write_text("pwned")
        out.append(name + " written")
    except OSError as e:
        out.append(name + "!" + type(e).__name__)
pathlib.Path("probe.txt").write_text("\\n".join(out))
"""

RUN_PROBE = {"name": "run_command", "input": {"command": "python3 probe.py"}}


def kiln_run(
    root: Path, tmp_path: Path, calls: list[dict[str, object]], **env: str
) -> subprocess.CompletedProcess[str]:
    """One real `kiln run` in `root` (yolo mode) whose scripted model makes `calls` in one step."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": calls}, "done"]))
    env = {**os.environ, **env, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "yolo", "--output-format", "json",
         "go"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_deny_rules_hide_and_lock_paths_for_commands(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "locked").mkdir()
    (root / ".kiln").mkdir()
    (root / "secrets" / "key.txt").write_text("deny-canary-41c9\n")
    (root / "locked" / "f.txt").write_text("original\n")
    (root / "open.txt").write_text("visible\n")
    (root / "probe.py").write_text(PROBE)
    (root / ".kiln" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Read(secrets/**)", "Edit(locked/**)"]}})
    )
    proc = kiln_run(root, tmp_path, [RUN_PROBE])
    assert proc.returncode == 0, proc.stderr
    lines = (root / "probe.txt").read_text().splitlines()
    assert lines == [
        "secrets/key.txt!FileNotFoundError",  # hidden
        "open.txt=visible",
        "locked/f.txt!OSError",  # read-only (EROFS)
        "free.txt written",
    ], lines
    assert (root / "locked" / "f.txt").read_text() == "original\n"
    assert "deny-canary-41c9" not in proc.stdout + proc.stderr


def test_absolute_deny_rules_reach_the_sandbox(tmp_path: Path, kiln_home: Path) -> None:
    """`Read(//abs/path)` names one path, but the bounded walk that finds a rule's paths started
    at `/` and looked into every folder of the machine in turn: past 10,000 folders (`/usr`
    alone) it stopped before reaching the workspace, and the file stayed readable to commands.
    The walk now only enters folders that can lead to a match."""
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "locked").mkdir()
    (root / "secrets" / "key.txt").write_text("deny-canary-41c9\n")
    (root / "locked" / "f.txt").write_text("original\n")
    (root / "open.txt").write_text("visible\n")
    (root / "probe.py").write_text(PROBE)
    rules = {"deny": [f"Read(/{root}/secrets/key.txt)", f"Edit(/{root}/locked/f.txt)"]}
    (kiln_home / "settings.json").write_text(json.dumps({"permissions": rules}))
    proc = kiln_run(root, tmp_path, [RUN_PROBE], KILN_HOME=str(kiln_home))
    assert proc.returncode == 0, proc.stderr
    hidden, *others = (root / "probe.txt").read_text().splitlines()
    assert hidden.startswith("secrets/key.txt!"), hidden  # a hidden file: no content to read
    assert others == ["open.txt=visible", "locked/f.txt!OSError", "free.txt written"], others
    assert (root / "locked" / "f.txt").read_text() == "original\n"


DEEP_PROBE = """
import pathlib
out = []
try:
    out.append("read " + pathlib.Path("conf/sub/b.env").read_text().strip())
except OSError as e:
    out.append("read!" + type(e).__name__)
try:
    pathlib.Path("conf/sub/c.lock").write_text("pwned")
    out.append("written")
except OSError as e:
    out.append("write!" + type(e).__name__)
pathlib.Path("probe.txt").write_text("\\n".join(out))
"""


def test_a_star_that_spans_folders_reaches_the_sandbox(tmp_path: Path, kiln_home: Path) -> None:
    """The permission check reads `conf/*.env` as fnmatch does, `*` across folders, so
    `read_file conf/sub/b.env` is denied; the sandbox's walk matched folder by folder, and a
    command read that file (and wrote `conf/sub/c.lock` past `Edit(conf/*.lock)`)."""
    root = tmp_path / "ws"
    (root / "conf" / "sub").mkdir(parents=True)
    (root / "conf" / "sub" / "b.env").write_text("deny-canary-77e1\n")
    (root / "conf" / "sub" / "c.lock").write_text("original\n")
    (root / "probe.py").write_text(DEEP_PROBE)
    rules = {"deny": ["Read(conf/*.env)", "Edit(conf/*.lock)"]}
    (kiln_home / "settings.json").write_text(json.dumps({"permissions": rules}))
    read_it = {"name": "read_file", "input": {"path": "conf/sub/b.env"}}
    proc = kiln_run(root, tmp_path, [read_it, RUN_PROBE], KILN_HOME=str(kiln_home))
    assert "denied by rule Read(conf/*.env)" in proc.stdout, proc.stdout  # read_file, exit 5
    read, write = (root / "probe.txt").read_text().splitlines()
    assert read.startswith("read!") and write.startswith("write!"), (read, write)
    assert (root / "conf" / "sub" / "c.lock").read_text() == "original\n"
    assert "deny-canary-77e1" not in proc.stdout + proc.stderr


def test_a_deny_rule_hides_its_path_in_any_case(tmp_path: Path, kiln_home: Path) -> None:
    """The permission check matches a rule's path in any case (`Read(secrets/**)` refuses
    `read_file Secrets/key.txt`), but the sandbox hid only the spelling the rule wrote: on a
    case-sensitive file system a command read `Secrets/key.txt` and `.ENV` in full."""
    root = tmp_path / "ws"
    (root / "Secrets").mkdir(parents=True)
    (root / ".kiln").mkdir()
    (root / "Secrets" / "key.txt").write_text("deny-canary-7d21\n")
    (root / ".ENV").write_text("TOKEN=deny-canary-8e32\n")
    (root / "open.txt").write_text("visible\n")
    (root / ".kiln" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Read(secrets/**)", "Read(.env)"]}})
    )
    command = "cat Secrets/key.txt .ENV open.txt > probe.txt 2>&1; true"
    proc = kiln_run(root, tmp_path, [{"name": "run_command", "input": {"command": command}}])
    assert proc.returncode == 0, proc.stderr
    seen = (root / "probe.txt").read_text()
    assert "visible" in seen, seen  # the command ran
    assert "deny-canary" not in seen + proc.stdout + proc.stderr, seen


def test_a_write_deny_rule_does_not_undo_a_read_deny_rule(tmp_path: Path, kiln_home: Path) -> None:
    """A file both rules name (`Read(.env)`, `Write(.env)`): the write rule's read-only bind came
    after the read rule's cover and put the host's file back, and a command read it in full."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".env").write_text("TOKEN=deny-canary-5b18\n")
    (root / "open.txt").write_text("visible\n")
    rules = {"deny": ["Read(.env)", "Write(.env)", "Read(secrets/**)", "Write(secrets/**)"]}
    (root / "secrets").mkdir()
    (root / "secrets" / "key.txt").write_text("deny-canary-6c29\n")
    (kiln_home / "settings.json").write_text(json.dumps({"permissions": rules}))
    command = "cat .env secrets/key.txt open.txt > probe.txt 2>&1; true"
    call = {"name": "run_command", "input": {"command": command}}
    proc = kiln_run(root, tmp_path, [call], KILN_HOME=str(kiln_home))
    assert proc.returncode == 0, proc.stderr
    seen = (root / "probe.txt").read_text()
    assert "visible" in seen, seen  # the command ran
    assert "deny-canary" not in seen + proc.stdout + proc.stderr, seen
    assert (root / ".env").read_text() == "TOKEN=deny-canary-5b18\n"
