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
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "run_command", "input": {"command": "python3 probe.py"}}]},
        "done",
    ]))  # fmt: skip
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "yolo", "--output-format", "json",
         "go"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
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
