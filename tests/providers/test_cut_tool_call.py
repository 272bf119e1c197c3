"""A reply cut at the output limit in the middle of a tool call's arguments (Anthropic
``max_tokens``, OpenAI ``finish_reason: length``), through `kiln run` and the real SDKs against
the wire server, which cuts a long reply where a real API would: the call is not run, the file
is not half-written, and the model is told why, so it does not send the same call again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer

pytestmark = [pytest.mark.e2e]

BIG = {"text": "Writing the file.",
       "tool_calls": [{"name": "write_file",
                       "input": {"path": "notes.txt", "content": "line\n" * 8000}}]}  # fmt: skip


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_a_call_cut_at_the_output_limit_is_not_run_and_the_model_is_told_why(
    tmp_path: Path, api: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env["KILN_HOME"] = str(tmp_path / "home")
    with WireServer([BIG, "I will write it in parts."]) as srv:
        if api == "anthropic":
            env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=srv.url)
        else:
            env.update(KILN_PROVIDER="openai", OPENAI_BASE_URL=srv.openai_base_url,
                       KILN_MODEL="gpt-4.1")  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "Write notes.txt", "--root", str(repo),
             "--mode", "yolo", "--output-format", "stream-json"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not (repo / "notes.txt").exists()
    assert "its last tool call may be incomplete" in proc.stdout
    bodies = srv.bodies()
    assert len(bodies) == 2
    told = json.dumps(bodies[1]["messages"][-2:])
    assert "cut at the output limit" in told, told[-600:]
    assert "smaller" in told
