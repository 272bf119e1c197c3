"""A memory file edited while a session runs reaches the model once, appended at the tail: the
first message (and so the cached prefix) keeps the text it was sent with, byte for byte. Each
turn is its own `kiln run --resume` process against the wire server, as in the cache benches."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns, breaks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

OLD = "memory-rule: indent with four spaces"
NEW = "memory-rule: indent with tabs"
NOTE = "this file changed during the session"


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_an_edited_memory_file_is_appended_once(tmp_path: Path, api: str) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "KILN.md").write_text(f"# Project\n{OLD}\n")
    with WireServer(["one", "two", "three", "four"]) as server:
        runs = KilnRuns(tmp_path, server, api=api)
        runs.turn(root, "first")
        (root / "KILN.md").write_text(f"# Project\n{NEW}\n")
        runs.turn(root, "second")
        runs.turn(root, "third")
        (root / "KILN.md").unlink()
        runs.turn(root, "fourth")
        raws = runs.raws()
    assert len(raws) == 4 and breaks(raws) == []  # nothing already sent was rewritten
    assert raws[0].count(OLD.encode()) == 1 and NEW.encode() not in raws[0]
    # the second request: the old text where it was, the new one after it, with the note
    second = raws[1].decode()
    assert second.count(OLD) == 1 and second.count(NEW) == 1 and second.count(NOTE) == 1
    assert second.index(OLD) < second.index(NOTE) < second.index(NEW)
    assert second.index(NEW) < second.index("second")  # announced before the user's text
    # not again in the next turn: the file did not change since
    assert raws[2].decode().count(NEW) == 1 and raws[2].decode().count(NOTE) == 1
    # deleted: said once
    assert raws[3].decode().count("deleted during the session") == 1
