"""Spend that failed attempts had already reported is counted: an Anthropic stream reports its
prompt tokens in ``message_start``, and when it then drops, those tokens were billed. The retry
that succeeds carries them as ``discarded`` (spend, not context), and a run's cost — the number
`--max-cost-usd` holds to — includes them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.errors import ProviderError
from agent.providers.anthropic import AnthropicModel
from agent.providers.retry import RetryPolicy
from agent.testing.wire_server import WireServer
from agent.types import ModelReply, Usage
from tests.providers.conftest import SleepRecorder
from tests.providers.helpers import collect, make_request, track


def _event(kind: str, **fields: Any) -> str:
    return f"event: {kind}\ndata: " + json.dumps({"type": kind, **fields})


def dropped_after_start(input_tokens: int, *, text: str = "") -> dict[str, Any]:
    usage = {"input_tokens": input_tokens, "output_tokens": 1}
    message = {"id": "m", "type": "message", "role": "assistant", "content": [],
               "model": "claude-sonnet-4-6", "stop_reason": None, "usage": usage}  # fmt: skip
    frames = [_event("message_start", message=message)]
    if text:
        block = {"type": "text", "text": ""}
        frames += [
            _event("content_block_start", index=0, content_block=block),
            _event("content_block_delta", index=0, delta={"type": "text_delta", "text": text}),
        ]
    return {"raw": {"frames": frames, "end": "die"}}


async def test_a_retried_attempt_hands_its_billed_usage_to_the_reply(wire: WireServer) -> None:
    wire.enqueue(dropped_after_start(50_000), dropped_after_start(40_000), "ok")
    model = track(AnthropicModel(base_url=wire.url, api_key="k",
                                 retry=RetryPolicy(sleep=SleepRecorder())))  # fmt: skip
    reply = (await collect(model.stream(make_request())))[-1]
    assert isinstance(reply, ModelReply)
    assert reply.discarded == Usage(input_tokens=90_000, output_tokens=2)
    assert reply.usage.input_tokens < 90_000  # the reply's own usage stays the context's


async def test_a_broken_reply_carries_what_was_billed(wire: WireServer) -> None:
    wire.enqueue(dropped_after_start(30_000, text="Half an answer"))
    model = track(AnthropicModel(base_url=wire.url, api_key="k",
                                 retry=RetryPolicy(sleep=SleepRecorder())))  # fmt: skip
    with pytest.raises(ProviderError) as info:
        await collect(model.stream(make_request()))
    assert info.value.usage == Usage(input_tokens=30_000, output_tokens=1)  # type: ignore[attr-defined]


@pytest.mark.e2e
def test_kiln_run_cost_counts_attempts_that_failed(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    # 1,000,000 prompt tokens at $3 per million: $3 spent before the retry answered.
    with WireServer([dropped_after_start(1_000_000), "ok"]) as srv:
        env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=srv.url)
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "hi", "--root", str(tmp_path),
             "--output-format", "json"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["cost_usd"] >= 3.0, result
