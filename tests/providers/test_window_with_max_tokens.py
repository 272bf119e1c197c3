"""Anthropic refuses a request whose prompt fits the window but not with ``max_tokens`` beside
it, in its own words (``input length and `max_tokens` exceed context limit: P + T > W``). Kiln
read no window from those words, so it neither compacted nor asked again: the turn ended on
the 400 (exit 4). Now the window is believed, and the step asked again, compacted or, with
nothing to compact, for the output tokens the window leaves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.compaction import SUMMARY_MARKER
from agent.testing.wire_server import WireServer

pytestmark = [pytest.mark.e2e]

WINDOW = 24_000


def run(repo: Path, srv: WireServer, home: Path, task: str, *extra: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(KILN_HOME=str(home), KILN_PROVIDER="anthropic", ANTHROPIC_API_KEY="k",
               ANTHROPIC_BASE_URL=srv.url)  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "--root", str(repo), "--mode", "yolo",
         "--output-format", "json", *extra, task],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def _reads(names: range) -> dict[str, Any]:
    return {"tool_calls": [{"name": "read_file", "input": {"path": f"m{i}.py"}} for i in names]}


def test_a_grown_session_is_compacted_and_asked_again(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(30):
        body = "".join(f"def f{i}_{j}(x):\n    return x * {j}  # pad\n" for j in range(30))
        (repo / f"m{i}.py").write_text(body)
    summary = {"match": SUMMARY_MARKER, "text": "Read m0.py to m29.py: small functions."}
    steps = [summary, _reads(range(12)), "a", _reads(range(12, 30)), "b", "c"]
    with WireServer(steps, window=WINDOW) as srv:
        first = run(repo, srv, tmp_path / "home", "read the first twelve")
        second = run(repo, srv, tmp_path / "home", "read the rest", "--resume", first["session_id"])
    assert second["result"] == "b"
    assert any(SUMMARY_MARKER in r.raw.decode() for r in srv.requests)  # compacted, then asked


def test_with_nothing_to_compact_it_asks_for_fewer_output_tokens(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    # ~17k tokens with the frozen prefix: it fits the window, but not with 8,192 more
    task = "Answer in one word. " + "context " * 7_000
    with WireServer(["ok"], window=WINDOW) as srv:
        result = run(repo, srv, tmp_path / "home", task)
    assert result["result"] == "ok"
    sent = [r.body for r in srv.requests if r.method == "POST"]
    assert len(sent) == 2  # refused once, then asked again for fewer output tokens
    assert sent[0]["max_tokens"] > sent[1]["max_tokens"] >= 1024
