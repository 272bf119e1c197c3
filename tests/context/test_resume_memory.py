"""Memory already in a session's transcript is not sent again after a resume: a subdirectory's
KILN.md that the first process loaded when the agent first read there stays loaded in the next
`kiln run --resume` process, which would otherwise append it once more at the tail."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns, breaks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NOTE = "sub-memory: the payments folder uses integer cents"


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_subdirectory_memory_is_sent_once_across_processes(tmp_path: Path, api: str) -> None:
    root = tmp_path / "ws"
    (root / "payments").mkdir(parents=True)
    (root / "payments" / "KILN.md").write_text(f"# Payments\n{NOTE}\n")
    (root / "payments" / "a.py").write_text("A = 1\n")
    (root / "payments" / "b.py").write_text("B = 2\n")
    script = [{"tool_calls": [{"name": "read_file", "input": {"path": "payments/a.py"}}]},
              "read a",
              {"tool_calls": [{"name": "read_file", "input": {"path": "payments/b.py"}}]},
              "read b"]  # fmt: skip
    with WireServer(script) as server:
        runs = KilnRuns(tmp_path, server, api=api)
        runs.turn(root, "read a")
        runs.turn(root, "read b")
        raws = runs.raws()
    assert len(raws) == 4 and breaks(raws) == []
    assert raws[1].count(NOTE.encode()) == 1  # loaded when the agent first read there
    assert raws[3].count(NOTE.encode()) == 1  # not again after the resume
