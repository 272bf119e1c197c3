"""The status bar's tool-call counters count the whole session. A resumed session rebuilt them
from the messages of its current epoch only, so after a compaction they fell back (40 reads
became 3) and the guidance they carry (too many reads: search instead) went away."""

from __future__ import annotations

import re
from pathlib import Path

from agent.compaction import SUMMARY_MARKER
from agent.providers.scripted import ScriptedModel
from agent.session import DiskHost, Session
from tests.context.conftest import call, make_session

NAMES = ("alpha", "beta", "gamma", "delta")


async def test_tool_counters_survive_a_compaction_and_a_resume(workspace: Path) -> None:
    summary = {"match": SUMMARY_MARKER, "text": "read the helpers"}
    reads = [call("read_file", path=f"src/{n}.py") for n in NAMES * 2]
    session, _ = make_session(workspace, [*[summary] * 5, *reads, "done"], window=9000)
    assert await session.prompt("read every helper twice") == "end_turn"
    assert session.transcript.epoch >= 1  # compacted: some reads left the messages
    assert session.status.calls["read_file"] == 8
    model = ScriptedModel([call("list_files"), "listed"], context_window=9000)
    resumed = Session.load(session.id, host=DiskHost(), model=model)
    await resumed.prompt("now list the files")
    status = [
        b["text"]
        for b in model.requests[0].messages[-1]["content"]
        if b.get("text", "").startswith("<agent_status")
    ]
    assert re.search(r"\bread_file=8\b", status[-1]), status
