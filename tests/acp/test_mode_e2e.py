"""ACP session modes: session/set_mode is applied and stored, so session/list (``_meta.kiln``)
and a session/load in a new `kiln acp` process report the mode the user chose."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


async def test_mode_is_stored_listed_and_restored_on_load(spawn, workspace: Path) -> None:
    async with spawn(["ok"], EditorClient()) as agent:
        await agent.start(fs=False)
        created = await agent.conn.new_session(cwd=str(workspace))
        sid = created.session_id
        assert created.modes.current_mode_id == "ask"
        await agent.conn.set_session_mode(session_id=sid, mode_id="auto-edit")
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        mine = next(s for s in listed.sessions if s.session_id == sid)
        assert mine.field_meta == {"kiln": {"mode": "auto-edit"}}

    async with spawn(["ok"], EditorClient()) as agent:
        await agent.start(fs=False)
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        mine = next(s for s in listed.sessions if s.session_id == sid)
        assert mine.field_meta == {"kiln": {"mode": "auto-edit"}}
        loaded = await agent.conn.load_session(cwd=str(workspace), session_id=sid)
        assert loaded.modes.current_mode_id == "auto-edit"


async def test_a_ci_default_mode_is_reported_as_ci(spawn, workspace: Path) -> None:
    """KILN_ACP_MODE=ci is accepted (docs/acp.md); the session then runs in ci mode, so its mode
    state must say ci, not ask (a client showing "Ask" would expect questions it never gets)."""
    async with spawn(["ok"], EditorClient(), KILN_ACP_MODE="ci") as agent:
        await agent.start(fs=False)
        created = await agent.conn.new_session(cwd=str(workspace))
        assert created.modes.current_mode_id == "ci"
        assert "ci" in [m.id for m in created.modes.available_modes]
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        mine = next(s for s in listed.sessions if s.session_id == created.session_id)
        assert mine.field_meta == {"kiln": {"mode": "ci"}}
