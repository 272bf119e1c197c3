"""`kiln lsp` end to end: unsaved buffers reach the model, updates stream, turns cancel cleanly."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from lsprotocol import types

from agent.session_store import SessionStore
from agent.testing.wire_server import WireServer
from tests.lsp.conftest import running, server_env
from tests.lsp.kiln_client import ALLOW
from tests.waiting import processes_with, until

pytestmark = pytest.mark.e2e


async def test_unsaved_text_reaches_the_model_over_the_anthropic_wire(
    workspace: Path, kiln_home: Path
) -> None:
    steps = [
        {
            "text": "Let me look.",
            "tool_calls": [{"name": "read_file", "input": {"path": "app.py"}}],
        },
        "The greeting word is bonjour.",
    ]
    with WireServer(steps) as wire:
        env = server_env(kiln_home, ANTHROPIC_BASE_URL=wire.url, ANTHROPIC_API_KEY="test")
        async with running(workspace, env) as editor:
            hello = await editor.request("kiln/hello", {})
            assert hello["protocolVersion"] == 1
            assert "kiln/session/prompt" in hello["capabilities"]["methods"]

            uri = editor.open(workspace / "app.py", (workspace / "app.py").read_text())
            editor.type_text(uri, 'def greet(name):\n    return "bonjour " + name  # unsaved\n')
            session = await editor.request("kiln/session/new", {})
            sid = session["sessionId"]
            result = await editor.request(
                "kiln/session/prompt",
                {"sessionId": sid, "prompt": [{"type": "text", "text": "Which greeting word?"}]},
            )

            assert result["stopReason"] == "end_turn"
            # The unsaved buffer, not the disk, went to the model as the tool result.
            second = json.dumps(wire.bodies("/v1/messages")[-1])
            assert "bonjour" in second and "# unsaved" in second
            text = "".join(
                u["content"]["text"] for u in editor.updates_for(sid, "agent_message_chunk")
            )
            assert "bonjour" in text
            call = editor.updates_for(sid, "tool_call")[0]
            assert call["kind"] == "read" and call["title"].startswith("read_file")
            assert call["locations"][0]["path"] == str(workspace / "app.py")
            done = [u for u in editor.updates_for(sid, "tool_call_update") if u.get("content")][0]
            assert (
                done["status"] == "completed" and "bonjour" in done["content"][0]["content"]["text"]
            )
            usage = editor.updates_for(sid, "usage_update")[-1]
            assert usage["used"] > 0 and "cacheReadTokens" in usage["_meta"]
            assert (workspace / "app.py").read_text().count("hello") == 1  # disk untouched


async def test_plan_updates_and_session_list_and_load(
    workspace: Path, scripted_env: object
) -> None:
    steps = [
        {
            "text": "planning",
            "tool_calls": [
                {
                    "name": "todo_write",
                    "input": {
                        "items": [{"id": "1", "content": "read code", "status": "in_progress"}]
                    },
                }
            ],
        },
        "planned",
    ]
    env = scripted_env(steps)  # type: ignore[operator]
    async with running(workspace, env) as editor:
        sid = (await editor.request("kiln/session/new", {"mode": "ask"}))["sessionId"]
        result = await editor.request(
            "kiln/session/prompt", {"sessionId": sid, "prompt": "make a plan"}
        )
        assert result["stopReason"] == "end_turn"
        plan = editor.updates_for(sid, "plan")[0]
        assert plan["entries"] == [
            {
                "content": "read code",
                "priority": "medium",
                "status": "in_progress",
                "_meta": {"id": "1"},
            }
        ]
        listed = await editor.request("kiln/session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [sid]
        assert listed["sessions"][0]["title"] == "make a plan"
        assert (await editor.request("kiln/session/close", {"sessionId": sid})) == {"closed": True}
        listed = await editor.request("kiln/session/list", {})
        assert listed["sessions"][0]["live"] is False

    # A new server process resumes the stored session and replays its history.
    async with running(workspace, scripted_env(["resumed"])) as editor:  # type: ignore[operator]
        loaded = await editor.request("kiln/session/load", {"sessionId": sid})
        assert loaded["messages"] >= 4
        # The whole replay, its last text chunk included, arrived before the answer.
        replayed = editor.updates_for(sid)
        assert [u["sessionUpdate"] for u in replayed] == [
            "user_message_chunk",
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
            "plan",  # the plan as it stands, for the client's plan view
            "usage_update",  # what the session spent, for the client's usage line
        ]
        assert loaded["replayed"] == len(replayed)
        assert replayed[-3]["content"]["text"] == "planned"
        assert [e["content"] for e in replayed[-2]["entries"]] == ["read code"]
        spent = replayed[-1]
        assert spent["_meta"]["totals"] is True and spent["_meta"]["outputTokens"] > 0
        assert replayed[2]["kind"] == "think"  # the tool's real kind, as in the live turn
        # ...and the shape of §4's `tool_call` row, as live: pending, the tool's name in _meta
        assert (replayed[2]["status"], replayed[2]["_meta"]) == ("pending", {"tool": "todo_write"})
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "again"})
        assert result["stopReason"] == "end_turn"
        assert "resumed" in editor.updates_for(sid, "agent_message_chunk")[-1]["content"]["text"]


async def _wait_for_pid(path: Path) -> None:
    await until(lambda: path.exists() and path.read_text().strip(), what="the command to start")


async def _wait_gone(tag: Path) -> None:
    """The command is stopped (it runs in a PID namespace: found by ``tag`` in its command
    line, not by the pid it wrote)."""
    await until(lambda: not processes_with(str(tag)), what="the command to be stopped")


def sleeper(tag: Path) -> str:
    """A command that records that it started, then sleeps; ``tag`` marks its command line."""
    return (
        "python3 -c \"import os,time; open('pid.txt','w').write(str(os.getpid())); "
        f'time.sleep(60)" {tag}'
    )


async def test_cancel_notification_resolves_the_prompt_and_kills_the_command(
    workspace: Path, scripted_env: object
) -> None:
    steps = [
        {
            "text": "running",
            "tool_calls": [{"name": "run_command", "input": {"command": sleeper(workspace)}}],
        },
        "after cancel",
    ]
    async with running(workspace, scripted_env(steps), options={"mode": "yolo"}) as editor:  # type: ignore[operator]
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        prompt = asyncio.ensure_future(
            editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "sleep"})
        )
        await _wait_for_pid(workspace / "pid.txt")
        assert processes_with(str(workspace))  # seen on the host before it is stopped
        status = await editor.request("kiln/index/status", {})  # answered mid-turn
        assert status["root"] == str(workspace)
        editor.notify("kiln/session/cancel", {"sessionId": sid})
        result = await prompt
        assert result["stopReason"] == "cancelled"
        await _wait_gone(workspace)
        # The running tool call was closed on the wire before the answer, not left in_progress.
        started = editor.updates_for(sid, "tool_call")[-1]
        ends = [
            u
            for u in editor.updates_for(sid, "tool_call_update")
            if u["toolCallId"] == started["toolCallId"] and u.get("status")
        ]
        assert [u["status"] for u in ends] == ["in_progress", "failed"]  # ran, then was closed
        assert "cancelled" in ends[-1]["content"][0]["content"]["text"]
        # The transcript stays valid: the dangling tool_use was answered.
        messages = SessionStore().messages(sid)
        last = messages[-1]
        assert last["role"] == "user" and last["content"][0]["type"] == "tool_result"
        # And the session takes the next turn.
        again = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "go on"})
        assert again["stopReason"] == "end_turn"


async def test_cancel_request_is_a_hard_cancel(workspace: Path, scripted_env: object) -> None:
    steps = [
        {
            "text": "running",
            "tool_calls": [{"name": "run_command", "input": {"command": sleeper(workspace)}}],
        },
        "next turn",
    ]
    async with running(workspace, scripted_env(steps), options={"mode": "yolo"}) as editor:  # type: ignore[operator]
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        future = editor.protocol.send_request_async(
            "kiln/session/prompt", {"sessionId": sid, "prompt": "sleep"}, msg_id="hard-1"
        )
        await _wait_for_pid(workspace / "pid.txt")
        assert processes_with(str(workspace))  # seen on the host before it is stopped
        editor.notify("$/cancelRequest", types.CancelParams(id="hard-1"))
        try:
            outcome = await asyncio.wait_for(future, 60)
            assert outcome["stopReason"] == "cancelled"
        except Exception as exc:  # -32800 is the other legal answer to a cancelled request
            assert getattr(exc, "code", None) == -32800, exc
        await _wait_gone(workspace)
        listed = await editor.request("kiln/session/list", {})
        assert listed["sessions"][0]["busy"] is False
        again = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "go on"})
        assert again["stopReason"] == "end_turn"


async def test_permission_answered_and_unanswered(workspace: Path, scripted_env: object) -> None:
    steps = [
        {
            "match": "first",
            "text": "",
            "tool_calls": [{"name": "run_command", "input": {"command": "echo answered-yes"}}],
        },
        {"match": "answered-yes", "text": "ran it"},
        {
            "match": "second",
            "text": "",
            "tool_calls": [{"name": "run_command", "input": {"command": "echo never"}}],
        },
        {"match": "denied", "text": "it was refused"},
    ]
    async with running(
        workspace, scripted_env(steps), options={"permissionTimeout": 0.5}
    ) as editor:  # type: ignore[operator]
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        editor.on_permission = lambda params: ALLOW
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "first"})
        assert result["stopReason"] == "end_turn"
        asked = editor.permission_requests[0]
        assert asked["sessionId"] == sid and asked["toolCall"]["kind"] == "execute"
        assert [o["optionId"] for o in asked["options"]] == [
            "allow_once",
            "allow_always",
            "reject_once",
            "reject_always",
        ]
        ran = [u for u in editor.updates_for(sid, "tool_call_update") if u.get("content")]
        assert "answered-yes" in ran[0]["content"][0]["content"]["text"]

        editor.on_permission = lambda params: None  # the user walks away
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "second"})
        assert result["stopReason"] == "end_turn"
        assert len(editor.permission_requests) == 2
        refusal = editor.updates_for(sid, "refusal")[-1]
        assert refusal["tool"] == "run_command"
        # Nobody declined: the user and the model are told the question timed out.
        assert "timed out" in refusal["reason"] and "declined" not in refusal["reason"]
        failed = editor.updates_for(sid, "tool_call_update")[-1]
        told = failed["content"][0]["content"]["text"]
        assert failed["status"] == "failed" and "permission denied" in told
        assert "no answer within 0.5 s (the permission request timed out)" in told


async def test_requests_are_answered_while_turns_stream_in_two_sessions(
    workspace: Path, scripted_env: object, tmp_path: Path
) -> None:
    release = tmp_path / "release"  # the models answer once this file exists
    steps = [{"wait_for": str(release)}, "slow answer"]  # each session's model gets its own copy
    async with running(workspace, scripted_env(steps)) as editor:  # type: ignore[operator]
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        other = (await editor.request("kiln/session/new", {}))["sessionId"]
        idle = (await editor.request("kiln/session/new", {}))["sessionId"]
        turns = [
            asyncio.ensure_future(
                editor.request("kiln/session/prompt", {"sessionId": s, "prompt": "slow"})
            )
            for s in (sid, other)
        ]
        await editor.until_busy(sid, other)
        status = await editor.request("kiln/index/status", {})
        hello = await editor.request("kiln/hello", {})
        shown = await editor.request("kiln/context/show", {"sessionId": idle})
        busy = await editor.request("kiln/context/show", {"sessionId": sid})
        listed = {
            s["sessionId"]: s["busy"]
            for s in (await editor.request("kiln/session/list", {}))["sessions"]
        }
        assert not any(t.done() for t in turns)  # all answered while both turns were running
        # the index may not have started yet on a loaded machine; it answers either way
        assert status["state"] in ("idle", "indexing", "ready") and hello["protocolVersion"] == 1
        assert shown["busy"] is False and busy["busy"] is True
        assert listed == {sid: True, other: True, idle: False}
        release.touch()
        results = await asyncio.gather(*turns)
        assert [r["stopReason"] for r in results] == ["end_turn", "end_turn"]


async def test_client_disconnect_mid_turn_saves_the_session(
    workspace: Path, scripted_env: object
) -> None:
    steps = [
        {
            "text": "running",
            "tool_calls": [{"name": "run_command", "input": {"command": sleeper(workspace)}}],
        }
    ]
    async with running(workspace, scripted_env(steps), options={"mode": "yolo"}) as editor:  # type: ignore[operator]
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        asyncio.ensure_future(
            editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "x"})
        )
        await _wait_for_pid(workspace / "pid.txt")
        assert processes_with(str(workspace))  # seen on the host before it is stopped
        server = editor._server
        assert server is not None and server.stdin is not None
        server.stdin.close()  # the editor crashes: stdin hits EOF
        code = await asyncio.wait_for(server.wait(), 60)
        assert code == 0
        await _wait_gone(workspace)
    info = SessionStore().get(sid)
    assert info["status"] == "idle"
    messages = SessionStore().messages(sid)
    assert messages[-1]["content"][0]["type"] == "tool_result"
    assert os.path.exists(workspace / "pid.txt")
