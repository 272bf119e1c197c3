"""One `kiln run` with the scripted model, for attack tests that need its JSON result and
transcript: the steps go to a script file, the run gets a HOME and KILN_HOME of the test's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def kiln_run_json(
    root: Path,
    steps: list[Any],
    *,
    home: Path,
    kiln_home: Path,
    script: Path,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`kiln run --mode yolo --output-format json go` in ``root``; the process and its result."""
    script.write_text(json.dumps([*steps, "done"]))
    full_env = {**os.environ, "HOME": str(home), "KILN_HOME": str(kiln_home),
                "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script), **(env or {})}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "yolo", "--output-format", "json",
         "go"],
        cwd=root, env=full_env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, json.loads(proc.stdout)


def tool_results(transcript: Path) -> list[Any]:
    """The content of every tool result in a session's transcript, in order."""
    return [
        block["content"]
        for message in map(json.loads, transcript.read_text().splitlines())
        for block in message.get("content", [])
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
