"""A process killed while it wrote the session's wire log (the request bodies `kiln context`
reads) leaves a torn last line. The session must resume and go on logging, and `kiln context
diff` must still answer: the torn record is skipped, and the next one starts on its own line
instead of being glued to it. The resumed session used to fail every request on that line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def tear(path: Path) -> None:
    """Cut the file in the middle of its last line, as a kill in the middle of a write does."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 20])


def test_a_torn_wire_log_line_does_not_stop_the_session(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    with WireServer(["one", "two"]) as srv:
        runs = KilnRuns(tmp_path, srv)
        runs.turn(root, "first")
        wire = tmp_path / "home" / "sessions" / runs.session / "wire"
        tear(wire / "blocks.jsonl")
        tear(wire / "requests.jsonl")
        assert runs.turn(root, "second")["result"] == "two"
    for name in ("blocks.jsonl", "requests.jsonl"):
        last = (wire / name).read_text().splitlines()[-1]
        assert json.loads(last)  # the new record is whole, on its own line
    diff = subprocess.run(
        [sys.executable, "-m", "lsp_server", "context", "diff", runs.session, "--json"],
        env=runs.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert diff.returncode == 0, diff.stderr
    assert json.loads(diff.stdout)
