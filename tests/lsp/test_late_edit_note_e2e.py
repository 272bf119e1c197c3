"""The note that an edit landed after Kiln stopped waiting for it reaches the model once, even
when the server that delivered it is killed before its turn ends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.session_store import SessionStore
from tests.lsp.conftest import running
from tests.lsp.raw_client import RawServer
from tests.lsp.test_edits_e2e import _edit, _slow_editor_session
from tests.waiting import until

pytestmark = pytest.mark.e2e

NOTE = "applied your edit to app.py after all"


def _notes_sent(session_id: str) -> int:
    """How many times the stored conversation carries the late-edit note."""
    return sum(json.dumps(m).count(NOTE) for m in SessionStore().messages(session_id))


async def test_a_late_edit_note_is_not_delivered_again_after_a_kill(
    workspace: Path, scripted_env: Any, tmp_path: Path
) -> None:
    """The note was taken from the session's state into the next request, but the state was
    stored without it only at the turn's end: a server killed meanwhile (an editor that crashed,
    a killed process) left it stored, and the session resumed elsewhere told the model again
    about an edit its conversation already said had landed."""
    steps = [
        {"match": "go", "text": "", "tool_calls": [_edit("app.py", "hello", "hi")]},
        {"match": "not known", "text": "told"},
        {"match": "next", "wait_for": str(tmp_path / "never")},  # the turn still runs at the kill
    ]
    server = await RawServer.start(workspace, scripted_env(steps))
    try:
        sid = await _slow_editor_session(server, workspace)
        await server.request("go", "kiln/session/prompt", {"sessionId": sid, "prompt": "go"})
        edit = next(m for m in server.messages if m.get("method") == "workspace/applyEdit")
        server.send({"jsonrpc": "2.0", "id": edit["id"], "result": {"applied": True}})
        await server.wait_for(
            lambda m: "applied the edit of app.py after" in json.dumps(m.get("params", ""))
        )
        server.request_nowait("next", "kiln/session/prompt", {"sessionId": sid, "prompt": "next"})
        await until(lambda: _notes_sent(sid) == 1, what="the note in the next request")
        server.proc.kill()
        await server.proc.wait()
    finally:
        await server.close()

    async with running(workspace, scripted_env(["resumed"])) as editor:
        await editor.request("kiln/session/load", {"sessionId": sid, "replay": False})
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "more"})
    assert _notes_sent(sid) == 1
