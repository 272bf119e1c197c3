"""The cost a `usage_update` carries is the session's total (PROTOCOL.md), also after the
session is loaded in a new `kiln acp` process: an editor showed a session that had cost dollars
as costing cents again, from zero, after each restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.session_store import SessionStore
from agent.testing.wire_server import WireServer
from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


def costs(client: EditorClient) -> list[float]:
    return [u["cost"]["amount"] for u in client.updates if u["sessionUpdate"] == "usage_update"]


async def test_usage_update_cost_is_the_session_total_after_a_load(
    spawn, workspace: Path, kiln_home: Path
) -> None:
    read = {"tool_calls": [{"name": "read_file", "input": {"path": "app.py"}}]}
    with WireServer([read, "first answer", "second answer"]) as wire:
        env = {"KILN_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": wire.url,
               "ANTHROPIC_API_KEY": "test"}  # fmt: skip
        first = EditorClient()
        async with spawn([], first, **env) as agent:
            await agent.start()
            sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
            await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "read"}])
        second = EditorClient()
        async with spawn([], second, **env) as agent:
            await agent.start()
            await agent.conn.load_session(cwd=str(workspace), session_id=sid)
            await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "again"}])
    total = sum(u["cost_usd"] for u in SessionStore(kiln_home / "sessions.db").usage(sid))
    assert costs(first)[-1] > 0
    assert costs(second)[-1] == pytest.approx(total, abs=1e-6)
    assert costs(second)[-1] > costs(first)[-1]
