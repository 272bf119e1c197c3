"""A build log given as the task (`kiln run --ci --task-file build.log`) can be megabytes. Sent
whole, a 20 MB log was one request of five million tokens (a model's window is a few hundred
thousand; --max-cost-usd counts only after the call); past the budget the model gets its head
and tail, and reads the rest from the session folder by path, through the real OpenAI SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from lsp_server.headless.runner import TASK_BUDGET

pytestmark = pytest.mark.e2e


def test_a_huge_task_is_previewed_and_read_back_by_path(failing_repo: Path, tmp_path: Path) -> None:
    lines = [f"ERROR step {n}: test_module_{n % 97} failed" for n in range(200_000)]
    lines[150_000] = "ROOT CAUSE: calc.add subtracts"
    log = tmp_path / "build.log"
    log.write_text("\n".join(lines) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    script = [
        {"match": "characters omitted", "tool_calls": [
            {"name": "grep", "input": {"pattern": "ROOT CAUSE", "path": "{saved}"}}]},
        {"match": "ROOT CAUSE: calc.add subtracts", "text": "Found it."},
    ]  # fmt: skip
    ready = tmp_path / "ready"  # the first request waits until the steps naming the file are in
    with WireServer([{"wait_for": str(ready)}]) as srv:
        env.update(OPENAI_API_KEY="sk-test-0000", OPENAI_BASE_URL=srv.openai_base_url,
                   KILN_PROVIDER="openai", KILN_MODEL="gpt-4o")  # fmt: skip
        first = subprocess.Popen(
            [sys.executable, "-m", "lsp_server", "run", "--ci", "--output-format", "stream-json",
             "--task-file", str(log)],
            cwd=failing_repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert first.stdout is not None
        init = json.loads(first.stdout.readline())
        saved = Path(os.environ.get("KILN_HOME", "")) / "sessions" / init["session_id"] / "task.txt"
        srv.script.enqueue(*json.loads(json.dumps(script).replace("{saved}", str(saved))))
        ready.touch()
        out, err = first.communicate(timeout=120)
    assert first.returncode == 11, err
    assert saved.read_text() == log.read_text()
    sizes = [len(r.raw) for r in srv.requests]
    assert len(sizes) == 2 and max(sizes) < 2 * TASK_BUDGET, sizes
    result = json.loads(out.splitlines()[-1])
    assert result["result"] == "Found it." and len(result["task"]) < 2 * TASK_BUDGET
    assert str(saved) in result["task"]
