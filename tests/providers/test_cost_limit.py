"""`--max-cost-usd` in a real `kiln run` against the wire server: a limit the price table cannot
enforce (a model it does not know, configured or reported by the server) stops the run with a
line that says so, instead of silently counting the spend as 0; and a request whose least cost
(its input, the cached share at the cache price) would take the run past the limit is never
sent, so one large request on an expensive model cannot overshoot it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer

pytestmark = [pytest.mark.e2e]

READ = {"tool_calls": [{"name": "read_file", "input": {"path": "a.py"}}]}


def kiln_run(
    repo: Path, srv: WireServer, model: str, *extra: str, provider: str = "openai"
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(KILN_PROVIDER=provider, KILN_MODEL=model, OPENAI_BASE_URL=srv.openai_base_url,
               ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=srv.anthropic_base_url)  # fmt: skip
    task = (
        ["--task-file", str(repo / "task.txt")] if (repo / "task.txt").exists() else ["Read a.py"]
    )
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", *task, "--root", str(repo),
         "--mode", "yolo", *extra],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("x = 1\n")
    return tmp_path


def test_unknown_configured_model_with_a_cost_limit_sends_nothing(repo: Path) -> None:
    with WireServer([READ, "done"]) as srv:
        proc = kiln_run(repo, srv, "qwen2.5-coder:7b", "--max-cost-usd", "0.5")
    assert proc.returncode == 3, proc.stderr
    out = proc.stdout + proc.stderr
    assert "no price is known for model 'qwen2.5-coder:7b'" in out
    assert "--max-cost-usd" in out
    assert srv.requests == []


def test_a_server_reporting_an_unknown_model_stops_before_the_next_request(repo: Path) -> None:
    with WireServer([READ, "done"], model="mystery-large") as srv:
        proc = kiln_run(repo, srv, "gpt-4.1", "--max-cost-usd", "0.5")
    assert proc.returncode == 3, proc.stderr
    assert "no price is known for model 'mystery-large'" in proc.stdout + proc.stderr
    assert len(srv.bodies("/chat/completions")) == 1


def test_without_a_cost_limit_an_unknown_model_runs(repo: Path) -> None:
    with WireServer([READ, "done"]) as srv:
        proc = kiln_run(repo, srv, "qwen2.5-coder:7b")
    assert proc.returncode == 0, proc.stderr
    assert len(srv.bodies("/chat/completions")) == 2


# A long task (a build log, under the size that would be previewed): ~15,000 input tokens.
LOG = "".join(f"FAILED tests/test_dates.py::test_case_{i} - AssertionError: {i} != {i + 1}\n"
              for i in range(900))  # fmt: skip
CALLS = {"openai": "/chat/completions", "anthropic": "/messages"}
MODELS = {"openai": "gpt-4.1", "anthropic": "claude-sonnet-4-5"}
# A request is sent only with room for its input and 1,024 output tokens (at $8 and $15 a million)
FLOOR = {"openai": 1024 * 8 / 1e6, "anthropic": 1024 * 15 / 1e6}


def step_costs(repo: Path, provider: str) -> list[float]:
    """What each of the two requests costs, measured by an unlimited run of the same script."""
    with WireServer([READ, "done"]) as srv:
        proc = kiln_run(repo, srv, MODELS[provider], "--output-format", "stream-json",
                        provider=provider)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    totals = [e["cost_usd"] for e in map(json.loads, proc.stdout.splitlines())
              if e["type"] == "usage"]  # fmt: skip
    assert len(totals) == 2
    return [totals[0], totals[1] - totals[0]]


@pytest.fixture
def big_task(repo: Path) -> Path:
    (repo / "task.txt").write_text(LOG)
    return repo


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_request_that_would_cross_the_limit_is_not_sent(big_task: Path, provider: str) -> None:
    first, second = step_costs(big_task, provider)
    limit = first + FLOOR[provider] + second / 2  # the first request fits; the second cannot
    with WireServer([READ, "done"]) as srv:
        proc = kiln_run(big_task, srv, MODELS[provider], "--max-cost-usd", f"{limit:.6f}",
                        "--output-format", "json", provider=provider)  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert len(srv.bodies(CALLS[provider])) == 1  # the second request never left
    result = json.loads(proc.stdout)
    assert result["stop_reason"] == "max_cost"
    assert result["cost_usd"] <= limit
    assert "would cross the cost limit" in result["error"]
    said = [line for line in proc.stderr.splitlines() if "would cross the cost limit" in line]
    assert len(said) == 1, proc.stderr


def test_a_first_request_over_the_limit_sends_nothing(big_task: Path) -> None:
    first, _ = step_costs(big_task, "openai")
    with WireServer([READ, "done"]) as srv:
        proc = kiln_run(big_task, srv, "gpt-4.1", "--max-cost-usd", f"{first / 2:.6f}",
                        "--output-format", "stream-json")  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert srv.bodies("/chat/completions") == []
    result = json.loads(proc.stdout.splitlines()[-1])
    assert (result["type"], result["stop_reason"], result["cost_usd"]) == ("result", "max_cost", 0)
    assert "would cross the cost limit" in result["error"]


def test_the_cached_share_is_counted_at_the_cache_price(big_task: Path) -> None:
    """gpt-4.1 reads its cache at a quarter of the input price: the second request, mostly the
    first one's prefix, fits a limit that the same tokens at the input price would cross."""
    first, second = step_costs(big_task, "openai")
    with WireServer([READ, "done"]) as srv:
        limit = first + 1.5 * second + FLOOR["openai"]
        proc = kiln_run(big_task, srv, "gpt-4.1", "--max-cost-usd", f"{limit:.6f}")
    assert proc.returncode == 0, proc.stderr
    assert len(srv.bodies("/chat/completions")) == 2


def test_a_sub_agent_keeps_to_what_is_left_of_the_limit(repo: Path) -> None:
    """The `task` tool's sub-agent spends the run's money: its requests are held to the limit too
    (before, a sub-agent ran with no cost limit and its spend was only counted after it ended)."""
    for n in range(4):  # ~5,000 tokens each, under the tool output budget
        (repo / f"log{n}.txt").write_text(LOG[:20_000])
    reads = [{"tool_calls": [{"name": "read_file", "input": {"path": f"log{n}.txt"}}]}
             for n in range(4)]  # fmt: skip
    delegate = {"tool_calls": [{"name": "task", "input": {"description": "Read the logs"}}]}
    with WireServer([delegate, *reads, "the sub-agent's answer", "done"]) as srv:
        proc = kiln_run(repo, srv, "gpt-4.1", "--max-cost-usd", "0.03", "--output-format", "json")
    assert proc.returncode == 3, proc.stderr
    assert len(srv.bodies("/chat/completions")) < 7  # the sub-agent stopped before the limit
    result = json.loads(proc.stdout)
    assert result["stop_reason"] == "max_cost"
    assert result["cost_usd"] <= 0.03
