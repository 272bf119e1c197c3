"""A model that repeats one failing call (a small local model calling `list_files` on
"list_files" 49 times, warned by the status bar at each step) used to burn the whole step budget.
Five identical failures in a row end the turn as `repeated_failure` (exit 3, docs/ci.md); calls
that fail differently, or a success between them, do not. Real `kiln run`, real OpenAI SDK
against the scripted wire server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from agent.turn import STUCK_LIMIT
from tests.headless.test_run_ci import call

pytestmark = pytest.mark.e2e

STUCK = call("list_files", path="list_files")  # "list_files does not exist"
OTHER = call("list_files", path="missing")  # fails too, with another error


def run(root: Path, script: list) -> tuple[subprocess.CompletedProcess, list[dict], int]:
    """`kiln run --output-format stream-json` on ``script``: the process, its events and the
    number of requests that reached the server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    with WireServer(script) as srv:
        env.update(OPENAI_API_KEY="sk-test-0000", OPENAI_BASE_URL=srv.openai_base_url,
                   KILN_PROVIDER="openai", KILN_MODEL="gpt-4o")  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "--mode", "yolo", "--output-format",
             "stream-json", "What does agent/loop.py do?"],
            cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=180,
        )  # fmt: skip
        sent = len(srv.requests)
    return proc, [json.loads(line) for line in proc.stdout.splitlines()], sent


def test_the_same_failing_call_ends_the_turn(tmp_path: Path) -> None:
    script = [STUCK] * 30 + ["done"]
    proc, events, sent = run(tmp_path, script)
    assert proc.returncode == 3, proc.stderr
    assert sent == STUCK_LIMIT < len(script)
    done = next(e for e in events if e["type"] == "done")
    result = events[-1]
    assert done["stop_reason"] == result["stop_reason"] == "repeated_failure"
    note = (f"stopped: list_files failed the same way {STUCK_LIMIT} times in a row "
            "(list_files does not exist)")  # fmt: skip
    assert note in result["error"], result
    assert result["is_error"] and result["steps"] == STUCK_LIMIT


def test_failures_that_differ_or_a_success_between_them_go_on(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    alternating = [STUCK, OTHER] * STUCK_LIMIT
    broken = [STUCK] * (STUCK_LIMIT - 1) + [call("list_files", path=".")]
    script = [*alternating, *broken, *[STUCK] * (STUCK_LIMIT + 5), "done"]
    proc, events, sent = run(tmp_path, script)
    # neither the alternating failures nor the run broken by a success stopped it: the first
    # STUCK_LIMIT identical failures in a row after them did
    assert sent == len(alternating) + len(broken) + STUCK_LIMIT, (sent, proc.stderr)
    assert proc.returncode == 3 and events[-1]["stop_reason"] == "repeated_failure"


def test_a_stuck_sub_agent_ends_and_its_parent_goes_on(tmp_path: Path) -> None:
    script = [call("task", description="What does agent/loop.py do?"), *[STUCK] * STUCK_LIMIT,
              "The sub-agent could not read it."]  # fmt: skip
    proc, events, sent = run(tmp_path, script)
    assert proc.returncode == 0, proc.stderr
    assert sent == len(script)  # the parent, not the stuck child, was answered the last reply
    task = next(e for e in events if e["type"] == "tool_call_update" and e["name"] == "task")
    assert "(the sub-agent stopped: repeated_failure)" in task["output"], task
    assert events[-1]["result"] == "The sub-agent could not read it."
