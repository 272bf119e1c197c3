"""An edit the ACP client writes after Kiln stopped waiting for it (``fs/write_text_file``
answered after the turn was cancelled, or after its timeout), through the ACP SDK's client side
against a real `kiln acp`.

The client still answers a request Kiln withdrew (ACP's ``$/cancel_request``), and an editor
that had already written its buffer answers that it did. That answer was ignored: the file was
written, but the session's record said the edit never happened. An answer that met the timeout
(read after the timeout fired, before Kiln withdrew the request) was lost the same way.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import WriteTextFileResponse

from agent.session_store import SessionStore
from agent.testing.wire_server import WireServer
from lsp_server.acp.frontend import FS_TIMEOUT
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


async def test_a_note_in_a_turn_the_provider_refused_goes_with_the_next_turn(
    spawn: Any, workspace: Path, tmp_path: Path
) -> None:
    """The editor's late answer came while the next turn ran, and that turn's tool results
    carried the note; then the provider refused the turn, which leaves the conversation before
    the next one. Before, the note went with it: the model never heard the edit landed. Now the
    next turn's request carries it (the real Anthropic SDK against the wire server)."""
    client = LateWriter()
    go_on = tmp_path / "go-on"
    read = {"tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]}
    refusal = {"text": "No", "stop_reason": "refusal"}
    steps = [_edit(), {"match": "second question", "wait_for": str(go_on)}, read, refusal, "fine"]
    with WireServer(steps) as wire:
        env = {"KILN_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": wire.url,
               "ANTHROPIC_API_KEY": "test"}  # fmt: skip
        async with spawn([], client, **env) as agent:
            await agent.start()
            sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            go = [text_block("go")]
            turn = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=go))
            await asyncio.wait_for(client.write_asked.wait(), 60)
            await agent.conn.cancel(session_id=sid)
            assert (await asyncio.wait_for(turn, 60)).stop_reason == "cancelled"
            second = [text_block("second question")]
            turn = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=second))
            await until(lambda: len(wire.requests) == 2, what="the second turn's request")
            client.release.set()  # lands while the turn waits for the model
            await client.wait_for(lambda u: "after Kiln had stopped waiting" in json.dumps(u))
            go_on.write_text("go on", encoding="utf-8")
            assert (await asyncio.wait_for(turn, 60)).stop_reason == "refusal"
            reply = await agent.conn.prompt(session_id=sid, prompt=[text_block("next")])
            assert reply.stop_reason == "end_turn"
    sent = [json.dumps(body) for body in wire.bodies("/messages")]
    assert len(sent) == 4, sent
    assert NOTE not in sent[1] and NOTE in sent[2]  # the refused request carried it
    assert "declined the previous turn" in sent[3] and "second question" not in sent[3]
    assert sent[3].count(NOTE) == 1
    assert client.text().endswith("fine"), client.text()


@dataclass
class FrozenAnswer(EditorClient):
    """An editor that answers ``fs/write_text_file`` at once, into a `kiln acp` it has just
    stopped (SIGSTOP): the answer waits in Kiln's input while Kiln's timeout passes."""

    pid: int = 0
    asked_at: float = 0.0
    stopped: asyncio.Event = field(default_factory=asyncio.Event)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        os.kill(self.pid, signal.SIGSTOP)
        self.asked_at = time.monotonic()
        self.stopped.set()
        return await super().write_text_file(session_id, path, content, **kwargs)


@pytest.mark.slow
async def test_an_answer_that_meets_the_timeout_is_a_late_edit(spawn: Any, workspace: Path) -> None:
    """Kiln resumes with the editor's answer unread and its write timeout due: in one turn of its
    event loop the timeout fires and the answer is read, before the request is withdrawn. That
    answer was dropped (the request no longer waited for, not yet listened to as withdrawn);
    now it is a late edit like any other: recorded, shown, and told to the model at once.

    The wait is Kiln's own timeout (30 s): a stopped process has no event to wait on."""
    client = FrozenAnswer()
    script = [_edit(), {"match": NOTE, "text": "heard it landed"}, "did not hear"]
    async with spawn(script, client) as agent:
        client.pid = agent.process.pid
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        turn = asyncio.ensure_future(agent.conn.prompt(session_id=sid, prompt=[text_block("go")]))
        await asyncio.wait_for(client.stopped.wait(), 60)
        try:  # the answer is in the pipe; Kiln's deadline passes while it is stopped
            await asyncio.sleep(client.asked_at + FS_TIMEOUT + 1 - time.monotonic())
        finally:
            os.kill(client.pid, signal.SIGCONT)
        assert (await asyncio.wait_for(turn, 60)).stop_reason == "end_turn"
    app = str(workspace / "app.py")
    assert client.writes == [(app, "def greet():\n    return 'hi'\n")]
    assert client.text() == "heard it landed", client.text()
    thought = client.text("agent_thought_chunk")
    assert "the editor applied the edit of app.py after Kiln had stopped waiting" in thought
    assert "app.py" in SessionStore().get(sid)["state"]["files_modified"]
    assert json.dumps(SessionStore().messages(sid)).count(NOTE) == 1
