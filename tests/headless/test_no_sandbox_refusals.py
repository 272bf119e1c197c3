"""`kiln run --ci` where no sandbox works (no bubblewrap on the runner): docs/ci.md says each
command is refused, but the refusal was only a failed tool call; the report listed no refusal
and a run whose every command was refused ended "nothing to do" (exit 11), so a pipeline read
it as a clean result. Each is now a refusal: in the report, the summary and the stream, and
the exit code is 5. A real `kiln run --ci` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_each_command_without_a_sandbox_is_a_refusal(failing_repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "run_command", "input": {
        "command": "touch made.txt"}}]}, "I could not run the tests."]))  # fmt: skip
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--ci", "--artifacts", str(out),
         "--output-format", "stream-json", "run the tests"],
        cwd=failing_repo, capture_output=True, text=True, timeout=300,
        env={**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
             "KILN_BWRAP": str(tmp_path / "no-bwrap")},
    )  # fmt: skip
    assert not (failing_repo / "made.txt").exists()
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    refused = [e for e in events if e["type"] == "refusal"]
    assert [e["tool"] for e in refused] == ["run_command"], proc.stdout
    assert "no backend is available" in refused[0]["reason"]
    result = events[-1]
    assert (result["exit_code"], result["outcome"]) == (5, "refused by policy"), proc.stderr
    assert [r["tool"] for r in result["refusals"]] == ["run_command"]
    assert "no backend is available" in (out / "summary.md").read_text()
