"""One `kiln run` with the scripted model, for attack tests that need its JSON result and
transcript: the steps go to a script file, the run gets a HOME and KILN_HOME of the test's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def kiln_run(
    root: Path,
    *,
    home: Path,
    kiln_home: Path,
    script: Path,
    mode: str = "yolo",
    output: str = "json",
    extra: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`kiln run --mode MODE [EXTRA] --output-format OUTPUT go` in ``root``, the scripted model
    following the steps in ``script``; no terminal to answer a question."""
    full_env = {**os.environ, "HOME": str(home), "KILN_HOME": str(kiln_home),
                "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script), **(env or {})}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--mode", mode, *extra,
         "--output-format", output, "go"],
        cwd=root, env=full_env, capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


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
    """``steps`` (then "done") in yolo mode with JSON output: the process and its result."""
    script.write_text(json.dumps([*steps, "done"]))
    proc = kiln_run(root, home=home, kiln_home=kiln_home, script=script, env=env, timeout=timeout)
    return proc, json.loads(proc.stdout)


def stream_transcript(proc: subprocess.CompletedProcess[str]) -> Path:
    """The transcript a `--output-format stream-json` run names in its last event."""
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return Path(events[-1]["transcript"])


def tool_results(transcript: Path) -> list[Any]:
    """The content of every tool result in a session's transcript, in order."""
    return [
        block["content"]
        for message in map(json.loads, transcript.read_text().splitlines())
        for block in message.get("content", [])
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def one_command(
    root: Path,
    command: str,
    *,
    home: Path,
    kiln_home: Path,
    script: Path,
    mode: str = "ci",
    env: dict[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], str]:
    """``command`` as the model's one `run_command` call in a stream-json run: the process and
    the run's tool results as one JSON text."""
    call = {"name": "run_command", "input": {"command": command}}
    script.write_text(json.dumps([{"tool_calls": [call]}, "done"]))
    proc = kiln_run(
        root, home=home, kiln_home=kiln_home, script=script, mode=mode, output="stream-json",
        env=env,
    )  # fmt: skip
    return proc, " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))


def sent_strings(folder: Path) -> list[str]:
    """Every string of the last request the provider was sent, as the wire log in the session's
    ``folder`` holds its blocks (``agent/wire_log.py``): what the model reads, not a copy."""
    wire = folder / "wire"
    texts = {}
    for line in (wire / "blocks.jsonl").read_text().splitlines():
        block = json.loads(line)
        texts[block["h"]] = json.loads(block["t"])
    last = json.loads((wire / "requests.jsonl").read_text().splitlines()[-1])
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for _label, digest in last["blocks"]:
        walk(texts[digest])
    return found
