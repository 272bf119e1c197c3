"""`kiln/session/compact` holds the session as a turn does (PROTOCOL.md).

It ran the compaction beside the session's turn bookkeeping: a prompt sent while the summary
request was out (an editor's chat lets the user type on after `/compact`) started a turn in the
same session at once, two writers of one transcript, and `kiln/session/cancel` did not stop the
compaction. Now the session is busy while it runs: the prompt is refused with -31002 and the
compaction ends as it would have."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.lsp.conftest import running, server_env

pytestmark = pytest.mark.e2e

SUMMARY = "<compaction_request>"


async def test_a_prompt_during_a_compaction_is_refused_as_busy(
    workspace: Path, kiln_home: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    gate.touch()
    # A small window and trigger make every request a candidate, so the manual compaction
    # summarises with the model. Each summary request waits for the gate (a `wait_for` step
    # is a pause, the next matching step the answer): open while the turns run (how many of
    # them compact first depends on what the context holds), closed by the test to hold the
    # manual compaction's.
    summary = [{"match": SUMMARY, "wait_for": str(gate)}, {"match": SUMMARY, "text": "summary"}]
    replies = [
        {"match": word, "text": f"{word.title()}."} for word in ("one", "two", "three", "four")
    ]
    script = [*summary * 12, *replies]
    with WireServer(script) as wire:
        env = server_env(
            kiln_home,
            OPENAI_BASE_URL=wire.openai_base_url,
            OPENAI_API_KEY="test",
            KILN_CONTEXT_WINDOW="8000",
            KILN_COMPACT_AT="0.1",
        )
        await _compact_while_prompting(workspace, env, gate)


async def _compact_while_prompting(workspace: Path, env: dict[str, str], gate: Path) -> None:
    async with running(workspace, env) as editor:
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        for text in ("one", "two"):
            await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": text})
        gate.unlink()
        compacting = asyncio.ensure_future(
            editor.request("kiln/session/compact", {"sessionId": sid}, timeout=120)
        )

        async def busy_soon() -> bool:
            for _ in range(1200):  # a minute at most: never a measure of speed
                shown = await editor.request("kiln/context/show", {"sessionId": sid})
                if shown["busy"]:
                    return True
                await asyncio.sleep(0.05)
            return False

        assert await busy_soon(), "the session was not busy while it compacted"
        with pytest.raises(Exception) as refused:
            await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "three"})
        assert getattr(refused.value, "code", None) == -31002, refused.value
        assert not compacting.done()
        gate.touch()
        done = await compacting
        assert done["compacted"] is True, done
        answer = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "three"})
        assert answer["stopReason"] == "end_turn"
        chunks = editor.updates_for(sid, "agent_message_chunk")
        assert chunks[-1]["content"]["text"] == "Three."

        # kiln/session/cancel stops a compaction as it stops a turn: nothing compacted
        gate.unlink()
        compacting = asyncio.ensure_future(
            editor.request("kiln/session/compact", {"sessionId": sid}, timeout=120)
        )
        assert await busy_soon(), "the session was not busy while it compacted"
        assert not compacting.done()  # held at its summary request
        editor.notify("kiln/session/cancel", {"sessionId": sid})
        assert await compacting == {"compacted": False}
        gate.touch()
        answer = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "four"})
        assert answer["stopReason"] == "end_turn"
        chunks = editor.updates_for(sid, "agent_message_chunk")
        assert chunks[-1]["content"]["text"] == "Four."
