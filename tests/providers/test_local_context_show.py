"""`kiln context show` after the embedded model fitted a request to its window: it shows the
request as llama.cpp received it (the memory cut in the middle, with the note), not the one
Kiln built before fitting, and says so. The real `kiln run` and the real SmolLM2 model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.providers import local_available

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.slow,
    pytest.mark.skipif(not local_available(), reason="the local extra is not installed"),
]


def _kiln(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env.update(KILN_HOME=str(tmp_path / "home"), PYTHONPATH=str(ROOT), KILN_PROVIDER="local",
               KILN_LOCAL_MAX_TOKENS="4")  # fmt: skip
    return subprocess.run([sys.executable, "-m", "lsp_server", *args], cwd=tmp_path / "ws",
                          env=env, capture_output=True, text=True, timeout=900)  # fmt: skip


def test_context_show_is_the_request_fitted_to_the_window(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    rules = "".join(f"- rule {i}: format widget {i} with care\n" for i in range(1000))
    (ws / "KILN.md").write_text(f"# Rules\n{rules}"[:39_000] + "\nLAST-RULE-9c1\n")
    run = _kiln(tmp_path, "run", "--mode", "yolo", "--max-steps", "1", "GOAL-5e2: what is here?")
    assert "Traceback" not in run.stderr, run.stderr
    shown = _kiln(tmp_path, "context", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    sent = json.dumps(report["request"]["messages"], ensure_ascii=False)
    assert "tokens cut to fit the embedded model's window" in sent
    assert "GOAL-5e2" in sent and "rule 0:" in sent  # the head and the goal stay
    assert "rule 500:" not in sent  # the middle went, as llama.cpp never saw it
    assert "fitted to the model's window of 8192 tokens" in report["request"]["sent_note"]
    text = _kiln(tmp_path, "context", "show")
    assert "as sent: fitted to the model's window of 8192 tokens" in text.stdout, text.stdout
