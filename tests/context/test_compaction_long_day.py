"""A long day in one session: compaction after compaction, each carrying forward the user's
messages, decisions, checks and identifiers verbatim. Kept whole, they grew with every compaction
until the history block alone outgrew the window and no compaction could bring a request under
it. They are now bounded to a share of the window (the newest kept, and the session's first
goal), the rest counted and kept verbatim in the archive files the block names."""

from __future__ import annotations

from pathlib import Path

from agent.compaction import SUMMARY_MARKER, estimate_tokens
from agent.compaction_facts import HISTORY_TAG
from tests.context.conftest import call, make_session

WINDOW = 16_000
TURNS = 60


def history(session) -> str:  # type: ignore[no-untyped-def]
    first = session.transcript.messages[0]["content"]
    return next(b["text"] for b in first if b.get("text", "").startswith(HISTORY_TAG))


async def test_the_history_block_stays_bounded_over_many_compactions(workspace: Path) -> None:
    summary = {"match": SUMMARY_MARKER, "text": "Checked a module; we must keep the helpers."}
    script: list = [summary] * TURNS
    for t in range(TURNS):
        script += [
            call("read_file", path="src/alpha.py"),
            f"Turn {t}: we must keep the cache warm; you should not touch file_{t}.py. "
            f"We will use option {t}. I will use the helper h{t}.",
        ]
    session, _ = make_session(workspace, script, window=WINDOW)
    for t in range(TURNS):
        goal = f"Task {t}: check module m{t} so the tests for ISSUE-{1000 + t} pass; " + "x " * 40
        assert await session.prompt(goal) == "end_turn"
    assert session.transcript.epoch >= 8  # compacted again and again
    text = history(session)
    assert estimate_tokens(text) < 0.3 * WINDOW
    head = str(session.transcript.messages[0]["content"])
    assert "Task 0: check module m0" in head  # the session's goal, verbatim
    assert "Task 1: check module m1" in text  # the first one compaction took, kept
    assert f"Task {TURNS - 5}: check module m{TURNS - 5}" in text  # and the latest
    assert "goals 40" in text.split("older items kept only in the files above: ")[1]
    assert session.compactor.request_tokens(session) < 0.8 * WINDOW
