"""The context benchmarks run end to end (real anthropic SDK against the local wire server)
and their figures hold on a short session; the full 30-turn figures are in the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_bench(name: str, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / name), *args, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
        cwd=ROOT,
    )
    assert out.stdout, out.stderr
    return json.loads(out.stdout)


@pytest.mark.slow
def test_cache_stability_with_a_compaction() -> None:
    result = run_bench("cache_stability.py", "--turns", "14", "--window", "12000")
    assert result["compactions"] >= 1
    assert result["unexplained_breaks"] == 0 and result["tool_list_breaks"] == 0
    breaks = [r for r in result["requests"] if "break" in r]
    assert breaks and all(b["break"].startswith("compaction to epoch") for b in breaks)
    # every request but those right before a compaction is a byte-identical prefix of the next
    for r in result["requests"][:-1]:
        if "break" not in r:
            assert r["api_shared"] == r["api_tokens"]


def test_prefix_size_figures() -> None:
    result = run_bench("prefix_size.py", "--skills", "20")
    assert result["deferred_tools"] == 40
    assert result["static_prefix_tokens"] > 1000
    assert result["all_schemas_in_prefix_tokens"] > result["static_prefix_tokens"]
    assert result["catalog_tail_tokens"] > 0
    assert result["prefix_unchanged"] and result["prefix_with_skills_tokens"] <= 3000
    assert result["deferral_saving"] > 0.5  # >= 0.85 at the bench's 100 skills / 200 tools
