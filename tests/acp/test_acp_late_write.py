"""An edit the ACP client writes after Kiln stopped waiting for it (``fs/write_text_file``
answered after the turn was cancelled, or after its timeout), through the ACP SDK's client side
against a real `kiln acp`.

The client still answers a request Kiln withdrew (ACP's ``$/cancel_request``), and an editor
that had already written its buffer answers that it did. That answer was ignored: the file was
written, but the session's record said the edit never happened.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import WriteTextFileResponse

from agent.session_store import SessionStore
from tests.acp.conftest import EditorClient
from tests.waiting import until

pytestmark = pytest.mark.e2e

NOTE = "applied your edit to app.py after all"


@dataclass
class LateWriter(EditorClient):
    """An editor that takes ``fs/write_text_file`` and writes its buffer only when released."""

    write_asked: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.write_asked.set()
        await self.release.wait()
        return await super().write_text_file(session_id, path, content, **kwargs)


def _edit() -> dict[str, Any]:
    args = {"path": "app.py", "old_text": "'hello'", "new_text": "'hi'"}
    return {"match": "go", "text": "", "tool_calls": [{"name": "edit_file", "input": args}]}


async def test_an_edit_written_after_a_cancel_reaches_the_session(
    spawn: Any, workspace: Path
) -> None:
    """The user pressed Stop while the editor was writing the allowed edit; the editor wrote it
    all the same and answered. The session now counts app.py among the files it modified (the
    `/context` view), and the model's next request says the edit landed, once."""
    client = LateWriter()
    script = [
        _edit(),
        {"match": NOTE, "text": "heard it landed"},
        {"match": "next", "text": "did not hear"},
        {"match": "more", "text": "fine"},
    ]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        turn = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text_block("go")]))
        await asyncio.wait_for(client.write_asked.wait(), 60)
        await agent.conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(turn, 60)).stop_reason == "cancelled"
        client.release.set()  # the editor wrote its buffer after all, and says so
        state = lambda: SessionStore().get(sid)["state"]  # noqa: E731
        await until(lambda: "app.py" in state().get("files_modified", []), what="app.py recorded")
        for text in ("next", "more"):
            reply = await agent.conn.prompt(session_id=sid, prompt=[text_block(text)])
            assert reply.stop_reason == "end_turn"
    app = str(workspace / "app.py")
    assert client.writes == [(app, "def greet():\n    return 'hi'\n")]
    assert client.text().startswith("heard it landed"), client.text()
    sent = json.dumps(SessionStore().messages(sid))
    assert sent.count(NOTE) == 1, sent


async def test_an_edit_written_while_the_next_turn_runs_is_shown_in_it(
    spawn: Any, workspace: Path, tmp_path: Path
) -> None:
    """The editor's late answer came while the next turn was running: that turn shows it as a
    thought (as Kiln's status notes are shown), and the model's next request says it landed."""
    client = LateWriter()
    go_on = tmp_path / "go-on"
    script = [
        _edit(),
        {"match": "second question", "wait_for": str(go_on)},
        "turn two",
        {"match": NOTE, "text": "heard it landed"},
    ]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        turn = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text_block("go")]))
        await asyncio.wait_for(client.write_asked.wait(), 60)
        await agent.conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(turn, 60)).stop_reason == "cancelled"
        turn = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=[text_block("second question")])
        )
        asked = lambda: "second question" in json.dumps(SessionStore().messages(sid))  # noqa: E731
        await until(asked, what="the second turn's request")
        client.release.set()
        await client.wait_for(lambda u: "after Kiln had stopped waiting" in json.dumps(u))
        go_on.write_text("go on", encoding="utf-8")
        assert (await asyncio.wait_for(turn, 60)).stop_reason == "end_turn"
        reply = await agent.conn.prompt(session_id=sid, prompt=[text_block("more")])
        assert reply.stop_reason == "end_turn"
    thought = client.text("agent_thought_chunk")
    assert "the editor applied the edit of app.py after Kiln had stopped waiting" in thought
    assert client.text().endswith("heard it landed"), client.text()
