"""A provider that refuses the request as too long for the context window (HTTP 400, in the
words OpenAI, vLLM, Anthropic and llama.cpp use): `kiln run` believes the window the server
named, compacts, and asks once more; when nothing can be compacted the error says what to do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.compaction import SUMMARY_MARKER
from agent.errors import ContextTooLong
from agent.providers.anthropic import AnthropicModel
from agent.providers.openai import OpenAIModel
from agent.testing.wire_server import WireServer
from tests.providers.helpers import collect, make_request, track

pytestmark = [pytest.mark.e2e]

TOO_LONG = (
    "This model's maximum context length is 16000 tokens. However, your messages resulted "
    "in 19000 tokens. Please reduce the length of the messages."
)


def read(path: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "read_file", "input": {"path": path}}]}


def kiln_run(
    repo: Path, srv: WireServer, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    given = env or {}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(KILN_PROVIDER="openai", OPENAI_BASE_URL=srv.openai_base_url, KILN_MODEL="gpt-4.1")
    env.update(given)
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "Summarise the modules", "--root",
         str(repo), "--mode", "yolo", "--output-format", "stream-json", *extra],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip


def overflowing(repo: Path) -> list[Any]:
    """Six reads, then a request the server finds too long, compaction's own, and an answer."""
    for n in range(6):
        body = "".join(f"def f{n}_{i}(x):\n    return x * {i}  # {'pad ' * 8}\n" for i in range(90))
        (repo / f"m{n}.py").write_text(body)
    steps = [read(f"m{n}.py") for n in range(6)]
    summary = "Read m0.py to m5.py: each defines 90 small functions."  # compaction's own request
    return [*steps, {"error": 400, "message": TOO_LONG}, summary,
            "All six modules define small functions."]  # fmt: skip


def test_kiln_run_compacts_and_asks_again_when_the_server_says_too_long(tmp_path: Path) -> None:
    with WireServer(overflowing(tmp_path)) as srv:
        proc = kiln_run(tmp_path, srv)
    assert proc.returncode == 0, proc.stderr
    assert "All six modules define small functions." in proc.stdout
    sizes = [len(r.raw) for r in srv.requests]
    assert len(sizes) == 9
    assert sizes[8] < sizes[6] / 2  # the refused step, sent again after compaction
    notes = [json.loads(line) for line in proc.stdout.splitlines() if "too long" in line]
    assert notes, proc.stdout[-2000:]


# A request is sent only with room for 1,024 output tokens besides its input ($8 a million)
FLOOR = 1024 * 8 / 1e6


def test_the_request_sent_again_after_an_overflow_keeps_to_max_steps(tmp_path: Path) -> None:
    """The refused request was the run's 7th model call: with --max-steps 7, asking again would
    be an 8th (it was sent, and the run ended as if within its limit); so would compaction's
    summary request, which is a model request too (it was sent: the extractive summary is used)."""
    with WireServer(overflowing(tmp_path)) as srv:
        proc = kiln_run(tmp_path, srv, "--max-steps", "7")
    assert proc.returncode == 3, proc.stderr
    assert len(srv.requests) == 7  # 7 steps; no summary request, no 8th step
    assert not any(SUMMARY_MARKER.encode() in r.raw for r in srv.requests)
    result = json.loads(proc.stdout.splitlines()[-1])
    assert (result["stop_reason"], result["steps"]) == ("max_steps", 7)
    assert result["error"] == "step limit reached (7)"


@pytest.mark.parametrize(
    ("provider", "body", "window"),
    [
        ("openai", {"error": {"message": TOO_LONG, "code": "context_length_exceeded"}}, 16000),
        ("anthropic", {"type": "error", "error": {"type": "invalid_request_error",
         "message": "prompt is too long: 208000 tokens > 200000 maximum"}}, 200000),
        ("openai", {"error": {"code": 400, "type": "exceed_context_size_error", "n_ctx": 4096,
         "message": "the request exceeds the available context size, try increasing it"}}, 4096),
    ],
    ids=["openai", "anthropic", "llama.cpp"],
)  # fmt: skip
async def test_context_overflow_is_its_own_error_with_the_named_window(
    wire: WireServer, provider: str, body: dict[str, Any], window: int
) -> None:
    raw = {"status": 400, "content_type": "application/json", "body": json.dumps(body)}
    wire.enqueue({"raw": raw})
    if provider == "openai":
        model: Any = track(OpenAIModel(base_url=wire.openai_base_url, api_key="k"))
    else:
        model = track(AnthropicModel(base_url=wire.url, api_key="k"))
    with pytest.raises(ContextTooLong) as info:
        await collect(model.stream(make_request()))
    assert info.value.window == window
    assert "new session" in info.value.hint and "context" in info.value.hint
    assert len(wire.bodies()) == 1


def run_one_reply(
    tmp_path: Path, provider: str, step: dict[str, Any]
) -> subprocess.CompletedProcess:
    """`kiln run "Why?"` against a wire server that answers ``step`` in ``provider``'s format."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    with WireServer([step]) as srv:
        if provider == "anthropic":
            env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=srv.url)
        else:
            env.update(KILN_PROVIDER="openai", OPENAI_BASE_URL=srv.openai_base_url)
        return subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "Why?", "--root", str(tmp_path)],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_reply_cut_at_the_output_limit_says_so(tmp_path: Path, provider: str) -> None:
    step = {"text": "The three causes are: first,", "stop_reason": "max_tokens"}
    proc = run_one_reply(tmp_path, provider, step)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "The three causes are: first," in out
    assert "stopped at the output limit (8192 tokens); the answer may be incomplete" in out


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_refused_reply_says_so(tmp_path: Path, provider: str) -> None:
    """Anthropic's ``stop_reason: refusal`` and OpenAI's ``finish_reason: content_filter``."""
    stop = "refusal" if provider == "anthropic" else "content_filter"
    proc = run_one_reply(tmp_path, provider, {"text": "I can't", "stop_reason": stop})
    assert "the model declined to answer" in proc.stdout + proc.stderr, proc.stderr


def test_compactions_summary_request_keeps_to_the_cost_limit(tmp_path: Path) -> None:
    """Compaction's summary request is paid like a step: one that would take the run past
    --max-cost-usd is not sent (before, it was, and only the next step was held back)."""
    script = overflowing(tmp_path)[:5]  # five reads; the sixth request would pass 80 % of 14,000
    env = {"KILN_CONTEXT_WINDOW": "14000"}
    with WireServer([*script, "done"]) as srv:
        proc = kiln_run(tmp_path, srv, env=env)
    totals = [json.loads(line).get("cost_usd") for line in proc.stdout.splitlines()
              if '"type": "usage"' in line]  # fmt: skip
    assert len(totals) >= 5, proc.stdout[-2000:]
    with WireServer([*script, "summary", "done"]) as srv:
        limit = totals[4] + FLOOR + 0.001  # the fifth read has room for 1,024 output tokens
        proc = kiln_run(tmp_path, srv, "--max-cost-usd", f"{limit:.6f}", env=env)
    assert proc.returncode == 3, proc.stderr
    assert len(srv.requests) == 5  # the five reads: no summary request
    assert not any(SUMMARY_MARKER.encode() in r.raw for r in srv.requests)
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["stop_reason"] == "max_cost"


def test_after_a_compaction_only_the_prefix_counts_as_cached(tmp_path: Path) -> None:
    """Compaction rewrites the messages, so the provider's cache serves only the frozen prefix of
    the next request: pricing all of the previous request's input at the cache price let the
    request asked again after an overflow through a limit its input alone would cross."""
    with WireServer(overflowing(tmp_path)) as srv:
        proc = kiln_run(tmp_path, srv)
    usage = [e for e in map(json.loads, proc.stdout.splitlines()) if e["type"] == "usage"]
    again = usage[-1]  # the request asked again after the compaction
    paid = (again["input_tokens"] * 2.0 + again["cache_read_tokens"] * 0.5) / 1e6  # gpt-4.1
    before = usage[-1]["cost_usd"] - paid - again["output_tokens"] * 8.0 / 1e6
    limit = before + 0.75 * paid + FLOOR
    with WireServer(overflowing(tmp_path)) as srv:
        proc = kiln_run(tmp_path, srv, "--max-cost-usd", f"{limit:.6f}")
    assert proc.returncode == 3, proc.stderr
    assert len(srv.requests) == 8  # six reads, the refused one, the summary: not sent again
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["stop_reason"] == "max_cost"
    assert result["cost_usd"] <= limit
