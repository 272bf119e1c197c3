"""The permission mode a session's first message states is stale once the mode changes (a
resume with `--mode`, an editor's mode switch): the change is appended at the tail of the next
message, once, and nothing already sent is rewritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns, breaks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_mode_changed_on_resume_is_announced_once(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    with WireServer(["one", "two", "three"]) as server:
        runs = KilnRuns(tmp_path, server)
        runs.turn(root, "first", "--mode", "ask")
        runs.turn(root, "second")  # --mode yolo
        runs.turn(root, "third")
        raws = runs.raws()
    assert breaks(raws) == []
    first, second, third = (r.decode() for r in raws)
    assert "permission_mode: ask" in first and "permission_mode: yolo" not in first
    assert second.count("permission_mode: yolo") == 1
    assert second.index("permission_mode: yolo") < second.index("second")
    assert third.count("permission_mode: yolo") == 1  # not again: the mode did not change
