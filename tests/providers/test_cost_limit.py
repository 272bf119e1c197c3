"""`--max-cost-usd` in a real `kiln run` against the wire server: a limit the price table cannot
enforce (a model it does not know, configured or reported by the server) stops the run with a
line that says so, instead of silently counting the spend as 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer

pytestmark = [pytest.mark.e2e]

READ = {"tool_calls": [{"name": "read_file", "input": {"path": "a.py"}}]}


def kiln_run(repo: Path, srv: WireServer, model: str, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(KILN_PROVIDER="openai", OPENAI_BASE_URL=srv.openai_base_url, KILN_MODEL=model)
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "Read a.py", "--root", str(repo),
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
