"""A file a memory file imports (`@docs/style.md`) is watched as the memory file is: edited,
created or deleted during the session, the importing file's text is sent again at the tail of
the next turn, once; the first message stays as it was sent. Each turn is its own
`kiln run --resume` process against the wire server."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.context.wire_runs import KilnRuns, breaks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

OLD = "style-rule: indent with four spaces"
NEW = "style-rule: indent with tabs"
LATER = "later-rule: name tests after behaviour"
NOTE = "this file changed during the session"


def test_an_edited_import_is_appended_once(tmp_path: Path) -> None:
    """Before, only the importing file's own stat was compared: an edit of `docs/style.md`
    never reached the session, which went on with the old rule."""
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "docs" / "style.md").write_text(f"{OLD}\n")
    (root / "KILN.md").write_text("# Project\n@docs/style.md\n@docs/later.md\n")
    with WireServer(["one", "two", "three", "four"]) as server:
        runs = KilnRuns(tmp_path, server)
        runs.turn(root, "first")
        (root / "docs" / "style.md").write_text(f"{NEW}\n")
        runs.turn(root, "second")
        runs.turn(root, "third")
        (root / "docs" / "later.md").write_text(f"{LATER}\n")  # an import not found at first
        runs.turn(root, "fourth")
        raws = [r.decode() for r in runs.raws()]
    assert len(raws) == 4 and breaks([r.encode() for r in raws]) == []
    assert raws[0].count(OLD) == 1 and NEW not in raws[0]
    second = raws[1]
    assert second.count(OLD) == 1 and second.count(NEW) == 1 and second.count(NOTE) == 1
    assert second.index(OLD) < second.index(NOTE) < second.index(NEW) < second.index("second")
    assert raws[2].count(NEW) == 1 and raws[2].count(NOTE) == 1  # not again: nothing changed
    assert LATER not in raws[2] and raws[3].count(LATER) == 1 and raws[3].count(NOTE) == 2
