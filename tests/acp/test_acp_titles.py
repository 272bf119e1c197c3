"""A session's title is the start of its first prompt (agent/session_turn.py). A prompt holding
half a surrogate pair made a title SQLite refuses (it stores UTF-8): the turn failed as an
internal error before the model was asked, and `session/list` never showed the session with a
title. `kiln acp` and `kiln lsp` read such text as U+FFFD (lsp_server/json_text.py,
test_acp_payload.py); a session that gets it another way, or a pair as two halves, is still
stored, titled and listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.hosts import DiskHost
from agent.providers.scripted import ScriptedModel
from agent.session import AgentConfig, Session
from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


async def test_half_a_surrogate_pair_in_the_first_prompt_still_makes_a_listed_title(
    spawn, workspace: Path
) -> None:
    session = Session.create(
        workspace, host=DiskHost(), config=AgentConfig(mode="ask"), model=ScriptedModel(["Hi."])
    )
    reason = await session.prompt("fix the \ud83d bug in \ud83d\ude00 mode")
    await session.aclose()
    assert reason == "end_turn"
    async with spawn(["Fine."], EditorClient()) as agent:  # the real server lists and loads it
        await agent.start()
        (listed,) = (await agent.conn.list_sessions(cwd=str(workspace))).sessions
        assert listed.session_id == session.id
        assert listed.title == "fix the \ufffd bug in \U0001f600 mode"  # the pair joined
        loaded = await agent.conn.load_session(cwd=str(workspace), session_id=session.id)
        assert loaded is not None
