"""The context use the provider measured survives a resume: the next `kiln run --resume`
process starts from the last reply's input count (the status bar says so and the compaction
trigger reads it), not from zero and the characters-per-token estimate, which a dense
transcript can run far past."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns, as_sent, breaks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def event(kind: str, **fields: object) -> str:
    return f"event: {kind}\ndata: " + json.dumps({"type": kind, **fields})


def reply_measured_at(input_tokens: int, text: str) -> dict[str, object]:
    """An Anthropic stream whose usage says the prompt was ``input_tokens`` long."""
    usage = {"input_tokens": input_tokens, "output_tokens": 1}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
               "model": "claude-sonnet-4-6", "stop_reason": None, "usage": usage}  # fmt: skip
    frames = [event("message_start", message=message),
              event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
              event("content_block_delta", index=0, delta={"type": "text_delta", "text": text}),
              event("content_block_stop", index=0),
              event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 1}),
              event("message_stop")]  # fmt: skip
    return {"raw": {"frames": frames, "end": "end"}}


def status_text(body: dict[str, object]) -> str:
    last = body["messages"][-1]["content"]  # type: ignore[index]
    return "".join(b.get("text", "") for b in last if "agent_status" in b.get("text", ""))


def test_measured_context_use_carries_over_a_resume(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    with WireServer([reply_measured_at(150_000, "a long one"), "next"]) as server:
        runs = KilnRuns(tmp_path, server)
        runs.turn(root, "first")
        runs.turn(root, "second")
        raws = runs.raws()
    assert len(raws) == 2 and breaks(raws) == []
    assert "context_used: 75% of the window" in status_text(as_sent(raws[1]))
