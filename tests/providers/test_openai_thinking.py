"""Reasoning from OpenAI-compatible servers is thinking, not the answer: ``reasoning_content``
/ ``reasoning`` deltas and a ``<think>…</think>`` block opening the text (its tags split across
chunks, or only ``</think>`` when the chat template opened it) stream as thinking, and the
stored reply — what the next request sends back — holds the answer alone. The real ``openai``
SDK against hand-written wire replies, then a real `kiln run --output-format stream-json`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.testing.wire_server import WireServer
from agent.types import ModelReply, TextDelta, ThinkingDelta
from tests.providers.helpers import collect, make_request
from tests.providers.test_compatible_servers import chunk, openai

ROOT = Path(__file__).resolve().parents[2]


def stream(*deltas: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    frames = [chunk(d) for d in deltas]
    return {"raw": {"frames": [*frames, chunk(finish=finish), "data: [DONE]"]}}


def _split(items: list[Any]) -> tuple[str, str, ModelReply]:
    thinking = "".join(i.text for i in items if isinstance(i, ThinkingDelta))
    text = "".join(i.text for i in items if isinstance(i, TextDelta))
    assert isinstance(items[-1], ModelReply)
    return thinking, text, items[-1]


def _answer(reply: ModelReply) -> str:
    return "".join(b.get("text", "") for b in reply.message["content"] if b["type"] == "text")


async def test_reasoning_deltas_are_thinking(wire: WireServer) -> None:
    wire.enqueue(
        stream({"role": "assistant", "reasoning_content": "The user wants "},
               {"reasoning_content": "a greeting."}, {"content": "Hello!"}),
        stream({"reasoning": "Ollama calls it reasoning."}, {"content": "Hi."}),
    )  # fmt: skip
    thinking, text, reply = _split(await collect(openai(wire).stream(make_request())))
    assert thinking == "The user wants a greeting." and text == "Hello!"
    assert _answer(reply) == "Hello!"
    thinking, text, reply = _split(await collect(openai(wire).stream(make_request())))
    assert thinking == "Ollama calls it reasoning." and _answer(reply) == "Hi."


async def test_an_inline_think_block_is_thinking_even_split_across_chunks(
    wire: WireServer,
) -> None:
    pieces = ["<thi", "nk>Check the", " file first.</th", "ink>\n\nThe", " answer is 42."]
    wire.enqueue(
        stream(*[{"content": p} for p in pieces]),
        stream({"content": "Only the close tag came back.</think>\n\nShort answer."}),
        stream({"content": "Code: <think> is a tag name."}),
    )
    model = openai(wire)
    thinking, text, reply = _split(await collect(model.stream(make_request())))
    assert thinking == "Check the file first." and text == "The answer is 42."
    assert _answer(reply) == "The answer is 42."
    *_, reply = await collect(model.stream(make_request()))
    assert _answer(reply) == "Short answer."  # the template opened <think>; the reply closes it
    thinking, text, reply = _split(await collect(model.stream(make_request())))
    assert thinking == "" and _answer(reply) == "Code: <think> is a tag name."


@pytest.mark.e2e
def test_kiln_run_shows_thinking_and_never_sends_it_back(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("A = 1\n")
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}  # fmt: skip
    with WireServer() as server:
        server.enqueue(
            stream({"content": "<think>SECRET-PLAN read a.py</think>"},
                   {"tool_calls": [call]}, finish="tool_calls"),
            stream({"reasoning_content": "MORE-THOUGHT it is one line"}, {"content": "A is 1."}),
        )  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KILN_", "OPENAI_"))}
        env.update(KILN_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT), KILN_PROVIDER="openai",
                   OPENAI_API_KEY="k", OPENAI_BASE_URL=server.openai_base_url)  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "--root", str(ws), "--mode", "yolo",
             "--output-format", "stream-json", "what is A?"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        bodies = [json.loads(r.raw) for r in server.requests if r.method == "POST"]
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    thoughts = "".join(e["text"] for e in events if e["type"] == "thought_delta")
    answer = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert "SECRET-PLAN" in thoughts and "MORE-THOUGHT" in thoughts
    assert "SECRET-PLAN" not in answer and answer.strip() == "A is 1."
    assert len(bodies) == 2 and "SECRET-PLAN" not in json.dumps(bodies[1])
    assistant = [m for m in bodies[1]["messages"] if m["role"] == "assistant"]
    assert assistant[0]["content"] is None and assistant[0]["tool_calls"]
