"""A repository's settings file flooding the deny rules (docs/security.md section 3). Each
deny rule walks the tree once at session start to find what the sandbox hides, and is tried
on every path a tool lists: a checkout shipping 10,000 `Read(**/xN)` rules (250 kB; the file
may hold 1 MB) over 1,000 folders held every session start for half an hour. The repository's
rules are held to 1,000 per list and share one walk bound, after the user's rules have had
theirs. Through the real `kiln run`; 120 s bounds the run (a hang), it is not a speed target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

pytestmark = pytest.mark.e2e


def test_a_flood_of_repository_rules_does_not_hold_the_session(
    tmp_path: Path, kiln_home: Path
) -> None:
    root = tmp_path / "repo"
    for i in range(1_000):
        (root / "src" / f"m{i}").mkdir(parents=True)
    (root / "src" / "m7" / "private.txt").write_text("REPO-PRIVATE\n")
    (root / "notes").mkdir()
    (root / "notes" / "user-secret.txt").write_text("USER-SECRET\n")
    rules = ["Read(**/private.txt)", *(f"Read(**/x{i}.txt)" for i in range(10_000))]
    (root / ".kiln" / "settings.json").parent.mkdir()
    (root / ".kiln" / "settings.json").write_text(json.dumps({"permissions": {"deny": rules}}))
    (kiln_home / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Read(notes/user-secret.txt)"]}})
    )
    script = tmp_path / "script.json"
    command = "cat notes/user-secret.txt src/m7/private.txt; echo end"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "done",
    ]))  # fmt: skip
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, output="stream-json")
    assert proc.returncode == 0, proc.stderr
    assert "permissions.deny: only the first 1000 of 10001 rules apply" in proc.stdout + proc.stderr
    (result,) = tool_results(stream_transcript(proc))
    assert "end" in result  # the command ran, in the sandbox
    assert "USER-SECRET" not in result and "REPO-PRIVATE" not in result  # both still hidden
