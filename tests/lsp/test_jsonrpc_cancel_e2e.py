"""`kiln lsp` requests withdrawn or cancelled, byte for byte over stdio: the server withdrawing
a permission request it stops waiting for, `$/cancelRequest` from the client, `shutdown` and
`kiln/session/close` cancelling a running turn. The rest of JSON-RPC is in test_jsonrpc_e2e.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer, error_code, frame
from tests.waiting import until

pytestmark = pytest.mark.e2e


async def test_an_unanswered_permission_request_is_withdrawn(
    workspace: Path, scripted_env: Any
) -> None:
    """PROTOCOL.md §4: after permissionTimeout the server sends $/cancelRequest for its
    request, refuses the action as timed out, and ignores a late answer."""
    steps = [
        {"match": "run", "text": "", "tool_calls": [{"name": "run_command", "input": {"command": "echo hi"}}]},
        {"match": "timed out", "text": "nobody answered"},
    ]  # fmt: skip
    server = await RawServer.start(workspace, scripted_env(steps))
    try:
        await server.initialize(workspace, initializationOptions={"permissionTimeout": 0.5})
        session = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        server.request_nowait(
            "turn", "kiln/session/prompt", {"sessionId": session, "prompt": "run"}
        )
        asked = await server.wait_for(lambda m: m.get("method") == "kiln/session/requestPermission")
        withdrawn = await server.wait_for(lambda m: m.get("method") == "$/cancelRequest")
        assert withdrawn["params"] == {"id": asked["id"]}
        assert (await server.response("turn"))["result"]["stopReason"] == "end_turn"
        late = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": late})
        assert (await server.request("after", "kiln/hello"))["result"]["protocolVersion"] == 1
    finally:
        await server.close()
    refusals = [
        m["params"]["update"]
        for m in server.messages
        if m.get("method") == "kiln/session/update"
        and m["params"]["update"]["sessionUpdate"] == "refusal"
    ]
    assert [r["reason"] for r in refusals] == [
        "no answer within 0.5 s (the permission request timed out)"
    ]
    assert "Traceback" not in server.stderr.decode(errors="replace")


async def test_cancel_withdraws_an_open_permission_request(
    workspace: Path, scripted_env: Any
) -> None:
    """PROTOCOL.md §4 kiln/session/cancel: a pending permission request is withdrawn with
    $/cancelRequest, the running tool call ends `failed`, and the prompt resolves `cancelled`."""
    steps = [{"text": "", "tool_calls": [{"name": "run_command", "input": {"command": "echo hi"}}]}]
    server = await RawServer.start(workspace, scripted_env(steps))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        session = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        server.request_nowait("turn", "kiln/session/prompt", {"sessionId": session, "prompt": "x"})
        asked = await server.wait_for(lambda m: m.get("method") == "kiln/session/requestPermission")
        server.notify("kiln/session/cancel", {"sessionId": session})
        withdrawn = await server.wait_for(lambda m: m.get("method") == "$/cancelRequest")
        assert withdrawn["params"] == {"id": asked["id"]}
        assert (await server.response("turn"))["result"]["stopReason"] == "cancelled"
    finally:
        await server.close()
    calls = {
        u["toolCallId"]: u["status"]
        for m in server.messages
        if m.get("method") == "kiln/session/update"
        and (u := m["params"]["update"])["sessionUpdate"] in ("tool_call", "tool_call_update")
        and "status" in u
    }
    assert calls and set(calls.values()) == {"failed"}, calls  # none left in_progress


async def test_cancel_request_on_a_waiting_request_answers_32800(
    workspace: Path, kiln_home: Path
) -> None:
    """LSP `$/cancelRequest`: a request still waiting (here on a registry that accepts the
    connection and never answers) is answered RequestCancelled -32800, and the server serves on."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(5)
        silent.setblocking(False)
        registry = f"http://127.0.0.1:{silent.getsockname()[1]}"
        accepted: list[socket.socket] = []

        def connected() -> bool:
            with contextlib.suppress(BlockingIOError):
                accepted.append(silent.accept()[0])
            return bool(accepted)

        server = await RawServer.start(workspace, server_env(kiln_home))
        try:
            await server.initialize(workspace, initializationOptions={"index": False})
            params = {"query": "x", "registry": registry}
            server.request_nowait("slow", "kiln/skills/search", params)
            await until(connected, what="the registry connection")
            server.notify("$/cancelRequest", {"id": "slow"})
            assert error_code(await server.response("slow")) == -32800
            assert (await server.request("after", "kiln/hello"))["result"]["protocolVersion"] == 1
        finally:
            await server.close()
            for conn in accepted:
                conn.close()


async def test_a_request_sent_behind_shutdown_is_refused_while_turns_are_cancelled(
    workspace: Path, scripted_env: Any, tmp_path: Path
) -> None:
    """§8: once `shutdown` is received every request is -32600, also one the client pipelined
    while the shutdown is still cancelling a running turn (no session is created then)."""
    steps = [{"wait_for": str(tmp_path / "never"), "text": "late"}]
    server = await RawServer.start(workspace, scripted_env(steps))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        server.request_nowait("turn", "kiln/session/prompt", {"sessionId": sid, "prompt": "hi"})

        for attempt in range(600):  # the turn runs once the session lists as busy
            listed = await server.request(f"list-{attempt}", "kiln/session/list")
            if listed["result"]["sessions"][0]["busy"]:
                break
            await asyncio.sleep(0.1)
        server.request_nowait("down", "shutdown")
        server.request_nowait("late-new", "kiln/session/new", {})
        assert error_code(await server.response("late-new")) == -32600
        assert (await server.response("turn"))["result"]["stopReason"] == "cancelled"
        assert (await server.response("down"))["result"] is None
        server.notify("exit")
        assert await server.exit_code() == 0
    finally:
        await server.close()


async def test_close_right_behind_a_prompt_cancels_that_turn(
    workspace: Path, scripted_env: Any
) -> None:
    """§4 `kiln/session/close` cancels a running turn, also one whose prompt arrived in the same
    read as the close (scheduled, not started): the prompt is answered `cancelled`, the model is
    never asked, and the session is no longer live."""
    server = await RawServer.start(workspace, scripted_env(["the turn ran"]))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        prompt = {"jsonrpc": "2.0", "id": "turn", "method": "kiln/session/prompt",
                  "params": {"sessionId": sid, "prompt": "hi"}}  # fmt: skip
        close = {"jsonrpc": "2.0", "id": "close", "method": "kiln/session/close",
                 "params": {"sessionId": sid}}  # fmt: skip
        assert server.proc.stdin is not None
        server.proc.stdin.write(b"".join(frame(json.dumps(m).encode()) for m in (prompt, close)))
        assert (await server.response("close"))["result"] == {"closed": True}
        assert (await server.response("turn"))["result"]["stopReason"] == "cancelled"
        listed = (await server.request("list", "kiln/session/list"))["result"]["sessions"]
        assert [(s["sessionId"], s["live"]) for s in listed] == [(sid, False)]
    finally:
        await server.close()


async def test_session_cancel_sent_with_an_id_is_refused_and_not_carried_out(
    workspace: Path, scripted_env: Any
) -> None:
    """PROTOCOL.md §4/§7: `kiln/session/cancel` is a notification. Sent with an id it was
    answered `null` and the turn was cancelled, where `kiln acp` answers its `session/cancel`
    sent with an id -32601: now `kiln lsp` answers -32601 too and cancels nothing (the open
    question stays open); the notification then cancels the turn."""
    steps = [{"text": "", "tool_calls": [{"name": "run_command", "input": {"command": "echo hi"}}]}]
    server = await RawServer.start(workspace, scripted_env(steps))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        session = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        server.request_nowait("turn", "kiln/session/prompt", {"sessionId": session, "prompt": "x"})
        await server.wait_for(lambda m: m.get("method") == "kiln/session/requestPermission")
        reply = await server.request(9, "kiln/session/cancel", {"sessionId": session})
        assert error_code(reply) == -32601, reply
        assert reply["error"]["message"] == (
            "kiln/session/cancel is a notification: send it without an id"
        )
        assert (await server.request("hello", "kiln/hello"))["result"]["protocolVersion"] == 1
        assert not [m for m in server.messages if m.get("method") == "$/cancelRequest"]
        assert not [m for m in server.messages if m.get("id") == "turn"]  # still running
        server.notify("kiln/session/cancel", {"sessionId": session})
        assert (await server.response("turn"))["result"]["stopReason"] == "cancelled"
    finally:
        await server.close()
    assert "Traceback" not in server.stderr.decode(errors="replace")
