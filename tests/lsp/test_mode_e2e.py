"""The permission mode has one owner: set through kiln/session/setMode, it governs the next
tool call, is stored with the session, and a new server process lists and loads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import running
from tests.waiting import answer_when, until

pytestmark = pytest.mark.e2e

RUN = {"tool_calls": [{"name": "run_command", "input": {"command": "echo mode-check"}}]}


def settings(kiln: dict[str, Any]) -> types.DidChangeConfigurationParams:
    return types.DidChangeConfigurationParams(settings={"kiln": kiln})


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


async def test_did_change_configuration_sets_the_mode_of_new_sessions(
    workspace: Path, scripted_env: Any
) -> None:
    """PROTOCOL.md §1: `workspace/didChangeConfiguration` with `settings.kiln` updates the
    settings for new sessions; a bad value is ignored and the previous one kept."""
    async with running(workspace, scripted_env(["ok"])) as editor:
        before = await editor.request("kiln/session/new", {})
        editor.workspace_did_change_configuration(settings({"mode": "yolo"}))
        hello = await answer_when(
            lambda: editor.request("kiln/hello", {}), lambda h: h["config"]["mode"] == "yolo"
        )
        assert hello["config"]["mode"] == "yolo"
        assert (await editor.request("kiln/session/new", {}))["mode"] == "yolo"
        editor.workspace_did_change_configuration(settings({"mode": "x"}))
        assert (await editor.request("kiln/hello", {}))["config"]["mode"] == "yolo"
        listed = await editor.request("kiln/session/list", {})
        assert listed_mode(listed, before["sessionId"]) == "ask"  # live sessions keep theirs


async def test_a_pushed_setting_the_server_refuses_is_shown_to_the_user(
    workspace: Path, scripted_env: Any
) -> None:
    """A setting changed in the editor to a value the server refuses (VS Code's
    `kiln.permissionTimeout: 0`) was only logged on the server's stderr: the user saw the
    setting take no effect and no word why. It is now a `window/showMessage` warning."""
    async with running(workspace, scripted_env(["ok"])) as editor:
        kept = (await editor.request("kiln/hello", {}))["config"]["permissionTimeout"]
        editor.workspace_did_change_configuration(settings({"permissionTimeout": 0}))
        shown = "show: Kiln settings not applied: permissionTimeout must be a positive number"
        await until(lambda: any(line.startswith(shown) for line in editor.logs), what=shown)
        assert (await editor.request("kiln/hello", {}))["config"]["permissionTimeout"] == kept
