"""Compaction's first tier stubs a read of a file that a later read or edit superseded. A file
read in pages (read_file's offset and limit, as its description asks for long files) is not
superseded by the next page: each page is other text, still the only copy of those lines the
model has. Only a later read that covers the same lines (or an edit of the file) supersedes."""

from __future__ import annotations

from pathlib import Path

from agent.compaction import CompactionConfig, Compactor
from tests.context.conftest import call, make_session


async def test_pages_of_one_file_are_not_stubbed_as_superseded(workspace: Path) -> None:
    script = [
        call("read_file", path="src/alpha.py", offset=1, limit=50),
        call("read_file", path="src/alpha.py", offset=51, limit=50),
        call("read_file", path="src/beta.py", limit=20),
        call("read_file", path="src/beta.py"),
        call("read_file", path="src/gamma.py"),
        call("read_file", path="src/delta.py"),
        "done",
    ]
    session, _ = make_session(workspace, script)
    await session.prompt("read alpha in pages")
    record = await Compactor(CompactionConfig(keep_rounds=2)).compact(session)
    assert record is not None and record.tier == 1
    results = [
        b["content"]
        for m in session.transcript.messages
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert "helper number 10 of alpha" in results[0]  # page 1: nothing read those lines again
    assert "helper number 60 of alpha" in results[1]
    assert results[2].startswith("[compacted: superseded read of src/beta.py")  # read whole later
