"""A command the agent runs that prints hundreds of megabytes (a test suite in a loop, `yes`):
`kiln run --ci` held the whole output in memory (2 GB after 8 seconds of `yes`, so a runner's
OOM killer ended the run with no outputs at all); it now keeps the output's start and end, says
how much was left out between, and stays small. A real `kiln run --ci` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_a_flood_of_output_is_kept_bounded(failing_repo: Path, tmp_path: Path) -> None:
    flood = "echo first-line; yes 0123456789abcdef | head -c 300000000; echo; echo last-line"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "run_command", "input": {
        "command": flood, "timeout": 1800}}]}, "done"]))  # fmt: skip
    measure = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:]); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")  # fmt: skip
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", measure, sys.executable, "-m", "lsp_server", "run", "--ci",
         "--artifacts", str(out), "--output-format", "json", "flood"],
        cwd=failing_repo, capture_output=True, text=True, timeout=600,
        env={**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)},
    )  # fmt: skip
    peak_kb = int(proc.stdout.strip().splitlines()[-1])
    assert peak_kb < 400_000, peak_kb  # 300 MB of output: before, held whole (over 1 GB)
    report = json.loads((out / "report.json").read_text())
    assert report["exit_code"] == 11, proc.stderr
    messages = [json.loads(line) for line in (out / "transcript.jsonl").read_text().splitlines()]
    result = next(b for m in messages for b in m["content"] if b.get("type") == "tool_result")
    text = json.dumps(result)
    assert "exit code 0" in text and "first-line" in text and "last-line" in text
    assert "bytes left out between them]" in text  # the model is told, at the top
