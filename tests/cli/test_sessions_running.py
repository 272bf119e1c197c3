"""`kiln sessions list` says which sessions are running a turn now. The stored status only
says how the last turn ended ("idle"), so a listing during a run (or a script waiting for one
to finish) could not tell; a turn's claim on the session (``agent.session_claim``) is what
says it, and a killed process's claim goes with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.repos import git
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def _env(kiln_home: Path, script: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "KILN_HOME": str(kiln_home),
            "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip


def _listed(root: Path, env: dict[str, str]) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "lsp_server", "sessions", "list", "--json"],
                          cwd=root, capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _text(root: Path, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-m", "lsp_server", "sessions", "list"],
                          cwd=root, capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    return proc.stdout


def _run(root: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "run", "--output-format", "json", "look around"],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_a_session_is_running_while_its_turn_runs_and_idle_after(
    tmp_path: Path, kiln_home: Path
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    gate = tmp_path / "gate"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"wait_for": str(gate)}, "done"]))
    env = _env(kiln_home, script)
    proc = _run(root, env)
    try:
        assert wait_until(lambda: [r["status"] for r in _listed(root, env)] == ["running"], 120)
        assert "(running)" in _text(root, env)
        gate.write_text("go")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rows = _listed(root, env)
    assert [(r["id"], r["status"]) for r in rows] == [(json.loads(out)["session_id"], "idle")]
    assert "(running)" not in _text(root, env)


def test_a_killed_run_is_not_left_running(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"wait_for": str(tmp_path / "never")}, "done"]))
    env = _env(kiln_home, script)
    proc = _run(root, env)
    try:
        assert wait_until(lambda: [r["status"] for r in _listed(root, env)] == ["running"], 120)
    finally:
        proc.kill()
        proc.wait()
    assert [r["status"] for r in _listed(root, env)] != ["running"]
