"""Small mistakes a script makes with `kiln`, each refused in one line with exit status 2
before anything is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def kiln(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )  # fmt: skip


def refused(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == "" and proc.stderr.startswith("kiln: ")
    assert proc.stderr.count("\n") == 1, proc.stderr
    return str(proc.stderr)


def test_the_filesystem_root_is_not_indexed(tmp_path: Path) -> None:
    """`kiln search --root "$DIR/"` with DIR unset would crawl the machine and write /.kiln."""
    existed = Path("/.kiln").exists()
    (tmp_path / "whole").symlink_to("/")
    for args in (("index", "/"), ("index", str(tmp_path / "whole")),
                 ("search", "anything", "--root", "/"), ("index", "--json", "/")):  # fmt: skip
        assert "filesystem root" in refused(kiln(*args, cwd=tmp_path))
    assert Path("/.kiln").exists() == existed


def test_an_empty_task_is_named_so(tmp_path: Path, kiln_home: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    env = {"KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    for task in ("", "  \n"):
        assert refused(kiln("run", task, cwd=tmp_path, env=env)) == "kiln: the task is empty\n"
    assert "exactly one" in refused(kiln("run", "", "--task-file", str(script), cwd=tmp_path))
    assert not (kiln_home / "sessions.db").exists()


def test_context_takes_a_turn_or_a_step_not_both(tmp_path: Path) -> None:
    for command in ("show", "diff"):
        line = refused(kiln("context", command, "--turn", "1", "--step", "2", cwd=tmp_path))
        assert line == "kiln: give --turn or --step, not both\n"
