"""`npm run bench` in extensions/vscode, which docs/vscode.md describes (the panel's cost per
streamed message over a long session, one long answer and one long code block), runs to its
end and prints its three reports. It stopped at its first message with "requestAnimationFrame
is not defined": the view scrolls at the next animation frame, which its jsdom page did not
offer. Only that it runs is checked here, never how fast (timings belong to the bench)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.npm import holding, npm_ci

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXTENSION = Path(__file__).resolve().parents[2] / "extensions" / "vscode"


def test_the_render_bench_runs_to_its_end() -> None:
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        pytest.skip("node/npm are not installed: the VS Code extension's bench needs Node 20+")
    with holding(EXTENSION):
        npm_ci(npm, EXTENSION, EXTENSION / "node_modules" / ".bin" / "vitest")
        # A short session (10 rounds); the long answer and code block are the bench's own.
        result = subprocess.run(
            [npm, "run", "bench", "--", "10"],
            cwd=EXTENSION, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "messages: 222, transcript entries at the end: 20" in output, output[-4000:]
    assert "one answer: 27630 characters in 1152 chunks" in output, output[-4000:]
    assert "one code block: 8408 characters in 351 chunks" in output, output[-4000:]
    assert output.count("late / early:") == 3, output[-4000:]
