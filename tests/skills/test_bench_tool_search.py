"""The tool_search bench runs and its quality figures hold (no timing assertions here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "tool_search.py"


def test_bench_reports_savings_and_accuracy() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--json", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["deferred_200_schemas"]["saving_whole_prefix"] >= 0.85
    assert report["skill_catalog_100"]["skills"] == 100
    assert report["search_1000_tools"]["queries"] == 50
    assert report["accuracy_50_intents"]["top3"] >= 0.9


def test_intents_reference_real_tools() -> None:
    data = json.loads((BENCH.parent / "tool_intents.json").read_text())
    names = {f"{t['server']}__{t['name']}" for t in data["tools"]}
    assert len(data["tools"]) == 200 and len(data["intents"]) == 50 and len(data["servers"]) == 5
    assert all(i["expected"] in names for i in data["intents"])
