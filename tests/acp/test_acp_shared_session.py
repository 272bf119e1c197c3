"""One session in two `kiln acp` processes (two editor windows on the same conversation): a
prompt while the other process runs a turn in it is -31002, as docs/acp.md says of a prompt
while a turn is running in that session (it was -32603, "internal error")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError

from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


async def test_a_prompt_while_another_process_runs_a_turn_is_turn_in_progress(
    spawn, workspace: Path
) -> None:
    release = workspace / "release"
    wait = {"command": "while [ ! -e release ]; do sleep 0.1; done"}
    steps = [{"tool_calls": [{"name": "run_command", "input": wait}]}, "First done."]
    first = EditorClient()
    async with spawn(steps, first, KILN_ACP_MODE="yolo") as one:
        await one.start()
        sid = (await one.conn.new_session(cwd=str(workspace))).session_id
        turn = asyncio.ensure_future(
            one.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "hold on"}])
        )
        await first.wait_for(lambda u: u.get("status") == "in_progress")  # the turn runs
        async with spawn(["never sent"], EditorClient()) as two:
            await two.start()
            await two.conn.load_session(cwd=str(workspace), session_id=sid)
            with pytest.raises(RequestError) as busy:
                await two.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "me too"}])
            assert busy.value.code == -31002
            assert "another Kiln process" in str(busy.value)
            release.write_text("go")
            assert (await turn).stop_reason == "end_turn"
            # The other process's turn is stored now: this copy is behind, and says how to
            # catch up in ACP terms (the hint named `kiln run --resume`).
            with pytest.raises(RequestError) as stale:
                await two.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "me too"}])
            assert stale.value.code == -31002 and "changed in another" in str(stale.value)
            hint = (stale.value.data or {}).get("hint", "")
            assert "session/load" in hint and "kiln run" not in hint, hint
