"""`kiln context show` after the embedded model fitted a request to its window: it shows the
request as llama.cpp received it (the memory cut in the middle, with the note), not the one
Kiln built before fitting, and says so. A real session on the real SmolLM2 model (a 1,536-token
window, so the prompt is short to evaluate), then the real `kiln context show`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.config import AgentConfig
from agent.hosts import DiskHost
from agent.providers import local_available
from agent.session import Session

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.slow,
    pytest.mark.skipif(not local_available(), reason="the local extra is not installed"),
]


def _show(kiln_home: Path, ws: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env.update(KILN_HOME=str(kiln_home), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "lsp_server", "context", "show", *args],
                          cwd=ws, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


async def test_context_show_is_the_request_fitted_to_the_window(
    tmp_path: Path, kiln_home: Path
) -> None:
    from agent.providers.local import LocalModel

    ws = tmp_path / "ws"
    ws.mkdir()
    rules = "".join(f"- rule {i}: format widget {i} with care\n" for i in range(400))
    (ws / "KILN.md").write_text(f"# Rules\n{rules}")
    session = Session.create(
        ws,
        host=DiskHost(),
        config=AgentConfig(mode="yolo", max_steps=1),
        model=LocalModel(n_ctx=1536, max_tokens=4),
    )
    await session.prompt("GOAL-5e2: what is here?")
    report = json.loads(_show(kiln_home, ws, "--json"))
    sent = json.dumps(report["request"]["messages"], ensure_ascii=False)
    assert "tokens cut to fit the embedded model's window" in sent
    assert "GOAL-5e2" in sent and "rule 0:" in sent  # the head and the goal stay
    assert "rule 200:" not in sent  # the middle went: llama.cpp never saw it
    assert "fitted to the model's window of 1536 tokens" in report["request"]["sent_note"]
    assert "as sent: fitted to the model's window of 1536" in _show(kiln_home, ws)
