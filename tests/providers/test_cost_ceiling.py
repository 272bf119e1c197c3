"""`--max-cost-usd` as a ceiling, in a real `kiln run` against the wire server (which stops a
reply at the request's `max_tokens`, as the real APIs do): a request's output is capped to what
the limit can still pay, sub-agents running at once share what is left (and the run's steps),
a request is not sent again after billed failed attempts that the limit cannot pay twice, and a
resumed session's limit counts only the run's own spend."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent.testing.wire_server import WireServer
from tests.providers.test_cost_limit import FLOOR, LOG, READ, kiln_run, step_costs

pytestmark = [pytest.mark.e2e]

LONG = {"text": "word " * 16_000}  # 20,000 output tokens when nothing stops it


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("x = 1\n")
    return tmp_path


def result_of(proc: subprocess.CompletedProcess) -> dict[str, Any]:
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def test_a_reply_is_capped_to_what_the_limit_can_pay(repo: Path) -> None:
    first, second = step_costs(repo, "openai")
    limit = first + second + 0.02  # room for ~2,500 output tokens at gpt-4.1's $8 a million
    with WireServer([READ, LONG]) as srv:
        proc = kiln_run(repo, srv, "gpt-4.1", "--max-cost-usd", f"{limit:.6f}",
                        "--output-format", "json")  # fmt: skip
    result = result_of(proc)
    assert result["cost_usd"] <= limit
    sent = srv.bodies("/chat/completions")
    assert len(sent) == 2
    assert 1024 <= sent[1]["max_tokens"] < 8192  # not the default: what the limit could pay
    assert (proc.returncode, result["stop_reason"]) == (3, "max_cost"), proc.stderr
    assert "the reply was cut at" in result["error"]


def test_a_request_without_room_for_a_reply_is_not_sent(repo: Path) -> None:
    (repo / "task.txt").write_text(LOG)  # ~15,000 input tokens: the second request costs ~$0.01
    first, second = step_costs(repo, "openai")
    limit = first + second + FLOOR["openai"] / 2  # its input fits; 1,024 output tokens do not
    with WireServer([READ, "done"]) as srv:
        proc = kiln_run(repo, srv, "gpt-4.1", "--max-cost-usd", f"{limit:.6f}",
                        "--output-format", "json")  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert len(srv.bodies("/chat/completions")) == 1
    result = result_of(proc)
    assert result["stop_reason"] == "max_cost"
    assert "fewer than the 1,024 a reply is given at least; it was not sent" in result["error"]


def delegate(*descriptions: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "task", "input": {"description": d}} for d in descriptions]}


def test_sub_agents_started_together_share_what_is_left(repo: Path) -> None:
    """Two `task` calls in one step: each sub-agent was given the whole remaining limit, and
    together they spent nearly twice it."""
    replies = [{"text": "word " * 3_200, "match": m} for m in ("Explore A", "Explore B")]
    with WireServer([delegate("Explore A", "Explore B"), *replies, "done"]) as srv:
        proc = kiln_run(repo, srv, "gpt-4.1", "--max-cost-usd", "0.05", "--output-format", "json")
    result = result_of(proc)
    assert result["cost_usd"] <= 0.05, proc.stderr
    assert (proc.returncode, result["stop_reason"]) == (3, "max_cost"), proc.stderr


def test_sub_agents_count_against_the_run_s_steps(repo: Path) -> None:
    reads = [READ] * 8
    with WireServer([delegate("Explore A", "Explore B"), *reads, *["found it"] * 4, "done"]) as srv:
        proc = kiln_run(repo, srv, "gpt-4.1", "--max-steps", "3", "--output-format", "json")
    result = result_of(proc)
    assert len(srv.bodies("/chat/completions")) == 3, proc.stderr
    assert (proc.returncode, result["stop_reason"], result["steps"]) == (3, "max_steps", 3)


def billed_then_dropped(input_tokens: int) -> dict[str, Any]:
    """An Anthropic stream that reports (and bills) its input, then breaks off."""
    usage = {"input_tokens": input_tokens, "output_tokens": 1}
    message = {"id": "m", "type": "message", "role": "assistant", "content": [],
               "model": "claude-sonnet-4-5", "stop_reason": None, "usage": usage}  # fmt: skip
    frame = "event: message_start\ndata: " + json.dumps({"type": "message_start",
                                                          "message": message})  # fmt: skip
    return {"raw": {"frames": [frame], "end": "die"}}


def test_billed_attempts_are_not_repeated_past_the_limit(repo: Path) -> None:
    """Each attempt that broke off had been billed ($0.03 here); three retries spent past it."""
    steps = [billed_then_dropped(10_000)] * 3 + ["done"]
    with WireServer(steps) as srv:
        proc = kiln_run(repo, srv, "claude-sonnet-4-5", "--max-cost-usd", "0.05",
                        "--output-format", "json", provider="anthropic")  # fmt: skip
    result = result_of(proc)
    assert result["cost_usd"] <= 0.05, proc.stderr
    assert len(srv.bodies("/messages")) == 1
    assert (proc.returncode, result["stop_reason"]) == (3, "max_cost")
    assert "another attempt could cross the cost limit" in result["error"]


def test_a_resumed_session_s_limit_counts_this_run_only(repo: Path) -> None:
    with WireServer([{"text": "word " * 6_000}]) as srv:  # 7,500 output tokens: ~$0.06
        first = result_of(kiln_run(repo, srv, "gpt-4.1", "--output-format", "json"))
    assert first["cost_usd"] > 0.05
    with WireServer(["done"]) as srv:
        proc = kiln_run(repo, srv, "gpt-4.1", "--resume", first["session_id"],
                        "--max-cost-usd", "0.05", "--output-format", "json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = result_of(proc)
    assert 0 < result["cost_usd"] <= 0.05  # this run's: what the limit counts
    assert result["session_cost_usd"] == pytest.approx(first["cost_usd"] + result["cost_usd"])


def test_the_model_is_told_what_the_limit_leaves(repo: Path) -> None:
    """The status bar's budget reading existed and was never filled: the model could not see a
    cost limit coming, and was cut off by it instead of finishing within it."""
    with WireServer([READ, "done"]) as srv:
        proc = kiln_run(repo, srv, "gpt-4.1", "--max-cost-usd", "0.5")
    assert proc.returncode == 0, proc.stderr
    second = json.dumps(srv.bodies("/chat/completions")[1])
    assert re.search(r"budget[^\n]*\$0\.0\d+ of \$0\.5 spent", second), second[-1500:]


def without_usage(text: str) -> dict[str, Any]:
    """An OpenAI-compatible stream that reports no usage (a proxy that drops it)."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4.1",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip

    frames = [chunk({"role": "assistant", "content": text}), chunk({}, "stop"), "data: [DONE]"]
    return {"raw": {"frames": frames}}


def test_a_reply_without_usage_counts_as_the_most_it_could_cost(repo: Path) -> None:
    """Counted as $0, replies of a provider that measured nothing never reached the limit."""
    with WireServer([without_usage("done")]) as srv:
        proc = kiln_run(repo, srv, "gpt-4.1", "--max-cost-usd", "0.5",
                        "--output-format", "stream-json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    # its input (some thousand tokens at $2 a million) and the 8,192 output tokens it may write
    assert events[-1]["cost_usd"] > 8192 * 8 / 1e6
    notes = [e["text"] for e in events if e["type"] == "status"]
    assert any("the provider reported no usage for this reply" in n for n in notes), notes


def test_a_free_model_runs_under_a_limit_of_nothing(repo: Path) -> None:
    """`--max-cost-usd 0` spends nothing: a model that costs nothing (the embedded one, or one
    served locally under its name) runs; it was stopped before its first request."""
    with WireServer([READ, "done"]) as srv:
        proc = kiln_run(repo, srv, "smollm2-135m-instruct", "--max-cost-usd", "0")
    assert proc.returncode == 0, proc.stderr
    assert len(srv.bodies("/chat/completions")) == 2
    with WireServer([READ, "done"]) as srv:
        proc = kiln_run(repo, srv, "gpt-4.1", "--max-cost-usd", "0")
    assert proc.returncode == 3, proc.stderr
    assert srv.bodies("/chat/completions") == []
