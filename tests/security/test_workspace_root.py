"""A workspace that holds the home folder or Kiln's state is refused by `kiln run` (docs/security.md
section 2): the sandbox binds the workspace writable, so a run in ``~`` would let commands rewrite
``~/.bashrc``. One line, exit 2, no session stored, the command never runs."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("where", ["home", "above-home", "kiln-home"])
def test_kiln_run_refuses_a_workspace_holding_home_or_kiln_state(
    tmp_path: Path, host_dir: Path, where: str
) -> None:
    home, kiln_home = host_dir / "home", host_dir / "home" / ".kiln"
    kiln_home.mkdir(parents=True)
    (home / ".bashrc").write_text("# rc\n")
    root = {"home": home, "above-home": host_dir, "kiln-home": kiln_home}[where]
    script = tmp_path / "script.json"
    step = {
        "tool_calls": [{"name": "run_command", "input": {"command": "echo pwned >> ~/.bashrc"}}]
    }
    script.write_text(json.dumps([step, "done"]))
    env = {**os.environ, "HOME": str(home), "KILN_HOME": str(kiln_home),
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "yolo", "--root", str(root), "go"],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "home folder" in line or "KILN_HOME" in line
    assert (home / ".bashrc").read_text() == "# rc\n"
    assert not (kiln_home / "sessions").exists() or not any((kiln_home / "sessions").iterdir())


def test_kiln_run_resume_refuses_a_stored_session_whose_root_holds_home(
    tmp_path: Path, host_dir: Path
) -> None:
    """A stored session is checked again on load: `sessions.db` is a plain file, and a session
    whose root was rewritten to the home folder (by hand, or an older Kiln) must not reopen
    there. One line, exit 2, the command never runs."""
    home, kiln_home = host_dir / "home", host_dir / "kiln-state"
    project = home / "proj"
    project.mkdir(parents=True)
    kiln_home.mkdir()
    (home / ".bashrc").write_text("# rc\n")
    script = tmp_path / "script.json"
    env = {**os.environ, "HOME": str(home), "KILN_HOME": str(kiln_home),
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "--mode", "yolo", *args,
             "--output-format", "json", "go"],
            cwd=project, env=env, capture_output=True, text=True, timeout=60,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    script.write_text(json.dumps(["done"]))
    first = run()
    assert first.returncode == 0, first.stderr
    session_id = json.loads(first.stdout)["session_id"]
    with sqlite3.connect(kiln_home / "sessions.db") as db:
        db.execute("UPDATE sessions SET root = ? WHERE id = ?", (str(home), session_id))
    step = {
        "tool_calls": [{"name": "run_command", "input": {"command": "echo pwned >> ~/.bashrc"}}]
    }
    script.write_text(json.dumps([step, "done"]))
    proc = run("--resume", session_id)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    (line,) = proc.stderr.strip().splitlines()
    assert "home folder" in line, line
    assert (home / ".bashrc").read_text() == "# rc\n"


def test_a_kiln_home_inside_the_workspace_is_refused_before_it_is_made(tmp_path: Path) -> None:
    """`KILN_HOME=state kiln run` (a relative path, inside the project) was refused as
    overlapping the workspace only after the session store was opened: the refused run left
    `state/sessions.db` in the checkout, an untracked file for the next `git add -A`."""
    repo = tmp_path / "repo"
    repo.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    env = {**os.environ, "HOME": str(tmp_path / "home"), "KILN_HOME": "state",
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "go"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"kiln: workspace {repo} overlaps Kiln's state folder {repo / 'state'}")
    assert list(repo.iterdir()) == []
