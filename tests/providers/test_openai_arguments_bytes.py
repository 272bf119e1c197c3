"""Tool-call arguments go back to an OpenAI-compatible server exactly as the model wrote them
(key order, spacing, escapes), in the same process and after a resume. A server that keeps the
tokens it generated in its cache (llama.cpp, vLLM, Ollama) reuses them on the next request only
if the assistant message repeats them byte for byte; a re-serialised object misses there."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns, as_sent, breaks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# As models write them: compact, keys in the model's order, a space before a colon, an escape.
READ = '{"path":"a.py","limit":5}'
GREP = '{ "pattern" : "caf\\u00e9", "path": "." }'


def test_arguments_are_resent_as_written(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 'café'\n", encoding="utf-8")
    calls = {"tool_calls": [{"name": "read_file", "arguments": READ},
                            {"name": "grep", "arguments": GREP}]}  # fmt: skip
    with WireServer([calls, "read both", "again"]) as server:
        runs = KilnRuns(tmp_path, server, api="openai")
        runs.turn(root, "look")
        runs.turn(root, "once more")  # another process: the stored transcript
        raws = runs.raws()
    assert len(raws) == 3 and breaks(raws) == []
    for raw in raws[1:]:
        assistant = as_sent(raw)["messages"][2]
        sent = [c["function"]["arguments"] for c in assistant["tool_calls"]]
        assert sent == [READ, GREP]
