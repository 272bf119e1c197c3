"""`KILN_CONTEXT_WINDOW` for an OpenAI-compatible server started with a small window, through
the real `kiln run`, the real openai SDK and the wire server. Ollama (``num_ctx``) cuts a longer
prompt from its front without an error, so nothing tells Kiln; before, Kiln assumed 128,000
tokens for any model it did not know and never compacted, while the server silently dropped the
system prompt and the goal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent.testing.wire_server import WireServer

FLOW = [
    {"tool_calls": [{"name": "read_file", "input": {"path": "big.py"}}]},
    {"tool_calls": [{"name": "read_file", "input": {"path": "big.py", "offset": 200}}]},
    "summary of the work so far",
    "done",
    "done",
]


def run(tmp_path: Path, window: str | None) -> subprocess.CompletedProcess[str]:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    (repo / "big.py").write_text(
        "\n".join(f"def f{i}(x):\n    '''helper {i} of the widget pipeline'''\n    return x * {i}\n"
                  for i in range(300))
    )  # fmt: skip
    with WireServer(FLOW) as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KILN_", "OPENAI_"))}
        env.update(OPENAI_BASE_URL=srv.openai_base_url, KILN_HOME=str(tmp_path / "home"),
                   KILN_MODEL="llama3.2")  # fmt: skip
        if window is not None:
            env["KILN_CONTEXT_WINDOW"] = window
        return subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "go", "--root", str(repo),
             "--mode", "yolo", "--output-format", "stream-json"],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip


def compactions(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return [e for e in events if e.get("type") == "compaction"]


def test_the_window_a_local_server_was_started_with_is_honoured(tmp_path: Path) -> None:
    proc = run(tmp_path, "4096")
    assert proc.returncode == 0, proc.stderr
    (compaction,) = compactions(proc)
    assert compaction["reason"].endswith("of 4096")


def test_a_bad_window_is_one_line(tmp_path: Path) -> None:
    proc = run(tmp_path, "4k")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "KILN_CONTEXT_WINDOW" in lines[0], (
        proc.stderr
    )


def test_the_reply_is_asked_to_fit_the_window_beside_the_prompt(tmp_path: Path) -> None:
    """A server started with a 6,000-token window refuses a request whose prompt and
    ``max_tokens`` do not both fit (vLLM's words). Before, Kiln asked for 8,192 output tokens
    beside a ~3,000-token prompt, so the very first request failed, and the error said the
    conversation no longer fit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(KILN_HOME=str(tmp_path / "home"), KILN_CONTEXT_WINDOW="6000")
    (tmp_path / "repo").mkdir()
    with WireServer(["Fine."], window=6000) as srv:
        env.update(
            KILN_PROVIDER="openai", OPENAI_BASE_URL=srv.openai_base_url, KILN_MODEL="gpt-4.1"
        )
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "Why?", "--root", str(tmp_path / "repo")],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Fine." in proc.stdout
    (body,) = srv.bodies()
    assert 1024 <= body["max_tokens"] < 3064
