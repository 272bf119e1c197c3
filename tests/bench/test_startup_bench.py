"""bench/startup.py: one round prints a row per command and checkout; bad input is one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench.startup", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_one_round_measures_every_command() -> None:
    proc = bench("--runs", "1", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout)
    assert {r["command"] for r in rows} >= {"kiln run (scripted)", "kiln search", "kiln index"}
    assert all(r["checkout"] == "this" and r["cpu_s"] > 0 for r in rows)


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    for args in (["--runs", "0"], ["--compare", str(tmp_path)]):
        proc = bench(*args)
        assert proc.returncode == 2
        assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
