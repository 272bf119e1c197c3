"""The window a server named when it refused a request as too long is the session's window from
then on, in a resumed process too: otherwise each `kiln run --resume` assumed the model's
catalog window again, never compacted in time, and sent requests the server refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.compaction import SUMMARY_MARKER
from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WINDOW = 16000
TOO_LONG = (
    f"This model's maximum context length is {WINDOW} tokens. However, your messages resulted "
    "in 19000 tokens. Please reduce the length of the messages."
)


def read(path: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "read_file", "input": {"path": path}}]}


def test_a_resumed_session_keeps_the_window_the_server_named(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for n in range(12):
        body = "".join(f"def f{n}_{i}(x):\n    return x * {i}  # {'pad ' * 8}\n" for i in range(90))
        (root / f"m{n}.py").write_text(body)
    summary = {"match": SUMMARY_MARKER, "text": "Read the modules: each defines small functions."}
    first = [*(read(f"m{n}.py") for n in range(6)), {"error": 400, "message": TOO_LONG}]
    second = [*(read(f"m{n}.py") for n in range(6, 12)), "Twelve modules read."]
    with WireServer([summary, *first, "Six modules read.", summary, *second]) as srv:
        runs = KilnRuns(tmp_path, srv, "openai")
        runs.turn(root, "read m0.py to m5.py")
        asked = len(srv.bodies())
        runs.turn(root, "now read m6.py to m11.py")
        later = srv.bodies()[asked:]
        assert srv.script.remaining == 0
    summaries = [b for b in later if SUMMARY_MARKER in str(b["messages"][-1])]
    assert summaries, "the resumed session never compacted"
    too_big = [len(str(b)) // 4 for b in later if len(str(b)) // 4 > WINDOW]
    assert too_big == []
