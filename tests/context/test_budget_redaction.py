"""An output over the budget under `kiln run --ci`: secrets are redacted before the output is cut
and saved, so the preview's cut cannot leave part of a secret that no longer matches, and the
saved full output (which the model reads back with read_file or grep) never holds one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.session_store import SessionStore

pytestmark = pytest.mark.e2e

SECRET = "canary-budget-5e1d77a0"


def test_a_long_output_is_redacted_before_it_is_cut_and_saved(
    tmp_path: Path, kiln_home: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "dump.txt").write_text(f"{SECRET} " * 3000 + "\n")  # ~69,000 characters on a line
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "read_file", "input": {"path": "dump.txt"}}]}, "read it",
    ]))  # fmt: skip
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "MY_SERVICE_TOKEN": SECRET}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--no-sandbox", "--artifacts",
         str(tmp_path / "out"), "--output-format", "json", "go"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 11, proc.stderr  # nothing changed
    session_id = json.loads(proc.stdout)["session_id"]
    store = SessionStore(kiln_home / "sessions.db")
    (result,) = [
        b["content"]
        for m in store.messages(session_id)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert "characters omitted" in result
    pieces = result.replace("[REDACTED:MY_SERVICE_TOKEN]", "\0").split("\0")
    assert all(SECRET[:4] not in p and SECRET[-4:] not in p for p in pieces), "part of a secret"
    saved = [p for p in store.folder(session_id).glob("*.txt") if "dump" not in p.name]
    assert saved and all(SECRET not in p.read_text() for p in saved)
