"""Compaction after a turn that got no reply: a cancel while the model was still answering, or a
provider error, leaves the user's prompt without an answer, and the next prompt follows it. The
rounds compaction removes must still start at a reply, or the kept part opens with tool results
whose calls were removed, which every provider rejects (the session could never run again)."""

from __future__ import annotations

from pathlib import Path

from agent.compaction import SUMMARY_MARKER
from agent.types import Message
from tests.context.conftest import call, make_session


def orphan_results(messages: list[Message]) -> list[str]:
    """tool_result ids with no tool_use in the assistant message just before them."""
    out = []
    for i, message in enumerate(messages):
        if message["role"] != "user":
            continue
        before = messages[i - 1] if i else {"content": []}
        calls = {b["id"] for b in before["content"] if b.get("type") == "tool_use"}
        out += [
            b["tool_use_id"]
            for b in message["content"]
            if b.get("type") == "tool_result" and b["tool_use_id"] not in calls
        ]
    return out


async def test_compaction_after_an_unanswered_prompt_keeps_calls_with_their_results(
    workspace: Path,
) -> None:
    reads = [call("read_file", path=f"src/{n}.py") for n in ("alpha", "beta", "gamma", "delta")]
    script = [
        {"match": SUMMARY_MARKER, "text": "read the helper modules"},
        call("read_file", path="src/app.py"),
        "first answer",
        {"raise": "bad_request", "message": "the provider refused this one"},
        *reads,
        *reads,
        "done",
    ]
    session, _ = make_session(workspace, script, window=12_000)
    assert await session.prompt("look at app.py") == "end_turn"
    assert await session.prompt("and now?") == "error"  # no reply: the prompt stays unanswered
    assert await session.prompt("read every helper, twice") == "end_turn"
    assert session.transcript.epoch >= 1, "the session was meant to compact"
    assert orphan_results(session.transcript.messages) == []
