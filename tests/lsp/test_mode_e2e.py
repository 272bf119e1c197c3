"""The permission mode has one owner: set through kiln/session/setMode, it governs the next
tool call, is stored with the session, and a new server process lists and loads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import running

pytestmark = pytest.mark.e2e

RUN = {"tool_calls": [{"name": "run_command", "input": {"command": "echo mode-check"}}]}


def listed_mode(listed: dict[str, Any], sid: str) -> str:
    return next(s["mode"] for s in listed["sessions"] if s["sessionId"] == sid)


async def test_set_mode_applies_persists_and_survives_a_restart(
    workspace: Path, scripted_env: Any
) -> None:
    async with running(workspace, scripted_env([RUN, "ran it", RUN, "ran it again"])) as editor:
        created = await editor.request("kiln/session/new", {})
        sid = created["sessionId"]
        assert created["mode"] == "ask"
        changed = await editor.request("kiln/session/setMode", {"sessionId": sid, "mode": "yolo"})
        assert changed["mode"] == "yolo"
        with pytest.raises(JsonRpcException) as bad:
            await editor.request("kiln/session/setMode", {"sessionId": sid, "mode": "godmode"})
        assert bad.value.code == -32602
        result = await editor.request(
            "kiln/session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        )
        assert result["stopReason"] == "end_turn"
        assert editor.permission_requests == []  # yolo: the command ran without a question
        assert listed_mode(await editor.request("kiln/session/list", {}), sid) == "yolo"

    # a new server process: the mode comes from the store, not from the server's default
    async with running(workspace, scripted_env([RUN, "ran it"])) as editor:
        assert listed_mode(await editor.request("kiln/session/list", {}), sid) == "yolo"
        loaded = await editor.request("kiln/session/load", {"sessionId": sid, "replay": False})
        assert loaded["mode"] == "yolo"
        result = await editor.request(
            "kiln/session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "again"}]}
        )
        assert result["stopReason"] == "end_turn" and editor.permission_requests == []
        back = await editor.request("kiln/session/setMode", {"sessionId": sid, "mode": "ask"})
        assert back["mode"] == "ask"
        assert listed_mode(await editor.request("kiln/session/list", {}), sid) == "ask"
