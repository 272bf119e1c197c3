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
    release = tmp_path / "release"
    # A small window and trigger make every request a candidate, so the manual compaction
    # summarises with the model; its summary request is held until the test releases it.
    script = [
        "One.",
        {"match": SUMMARY, "text": "first summary"},
        "Two.",
        {"match": SUMMARY, "wait_for": str(release), "text": "held summary"},
        "Three.",
        {"match": SUMMARY, "wait_for": str(release) + ".never", "text": "never sent"},
        "Four.",
    ]
    with WireServer(script) as wire:
        env = server_env(
            kiln_home,
            OPENAI_BASE_URL=wire.openai_base_url,
            OPENAI_API_KEY="test",
            KILN_CONTEXT_WINDOW="8000",
            KILN_COMPACT_AT="0.1",
        )
        await _compact_while_prompting(workspace, env, release)


async def _compact_while_prompting(workspace: Path, env: dict[str, str], release: Path) -> None:
    async with running(workspace, env) as editor:
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        for text in ("one", "two"):
            await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": text})
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
        release.touch()
        done = await compacting
        assert done["compacted"] is True, done
        answer = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "three"})
        assert answer["stopReason"] == "end_turn"
        chunks = editor.updates_for(sid, "agent_message_chunk")
        assert chunks[-1]["content"]["text"] == "Three."

        # kiln/session/cancel stops a compaction as it stops a turn: nothing compacted
        compacting = asyncio.ensure_future(
            editor.request("kiln/session/compact", {"sessionId": sid}, timeout=120)
        )
        assert await busy_soon(), "the session was not busy while it compacted"
        await editor.request("kiln/session/cancel", {"sessionId": sid})
        assert await compacting == {"compacted": False}
        answer = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "four"})
        assert answer["stopReason"] == "end_turn"
        chunks = editor.updates_for(sid, "agent_message_chunk")
        assert chunks[-1]["content"]["text"] == "Four."
