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
@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_cache_stability_40_steps_with_one_compaction(api: str) -> None:
    result = run_bench("cache_stability.py", "--api", api)[api]
    assert len(result["requests"]) == 40
    assert result["compactions"] == 1 and result["compaction_model_calls"] == 1
    assert result["unexplained_breaks"] == 0
    breaks = [r for r in result["requests"] if "break" in r]
    assert len(breaks) == 1 and breaks[0]["break"].startswith("compaction to epoch 1")
    # outside the compaction every request starts with the whole request before it
    assert result["kept_min"] == 1.0
    assert result["status_share"] <= 0.05
    assert result["share_median"] >= 0.97
    # three discoveries (two sidecar, one MCP) were found and called
    assert result["deferred_tools_called"] == {
        "db-migrations__check": True,
        "db-migrations__plan": True,
        "notes__search_notes": True,
    }


def test_prefix_size_figures() -> None:
    result = run_bench("prefix_size.py", "--skills", "20")
    assert result["deferred_tools"] == 40
    assert result["static_prefix_tokens"] > 1000
    assert result["all_schemas_in_prefix_tokens"] > result["static_prefix_tokens"]
    assert result["catalog_tail_tokens"] > 0
    assert result["prefix_unchanged"] and result["prefix_with_skills_tokens"] <= 3000
    assert result["deferral_saving"] > 0.5  # >= 0.85 at the bench's 100 skills / 200 tools
