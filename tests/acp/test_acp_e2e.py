"""`kiln acp` end to end: the SDK's ACP client drives the real server process over stdio."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from agent.testing.wire_server import WireServer
from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": args}]}


def tool_updates(client: EditorClient, kind: str) -> list[dict[str, Any]]:
    return [u for u in client.updates if u["sessionUpdate"] == kind]


async def test_initialize_and_new_session(spawn, workspace: Path) -> None:
    client = EditorClient()
    async with spawn(["unused"], client) as agent:
        init = await agent.start()
        assert init.agent_capabilities.load_session is True
        assert init.agent_info.name == "kiln"
        new = await agent.conn.new_session(cwd=str(workspace))
        assert new.session_id
        assert new.modes.current_mode_id == "ask"
        assert {m.id for m in new.modes.available_modes} >= {"ask", "auto-edit"}
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [new.session_id]


async def test_prompt_reads_the_clients_unsaved_buffer(spawn, workspace: Path) -> None:
    notes = str(workspace / "notes.txt")
    client = EditorClient(buffers={notes: "CLIENT-BUFFER unsaved notes\n"})
    script = [
        call("read_file", path="notes.txt"),
        {"match": "CLIENT-BUFFER", "text": "I saw the editor's buffer."},
        {"text": "I saw only the disk."},
    ]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        result = await agent.conn.prompt(
            session_id=sid, prompt=[{"type": "text", "text": "read notes.txt"}]
        )
    assert result.stop_reason == "end_turn"
    assert notes in client.reads
    assert client.text() == "I saw the editor's buffer."
    started = tool_updates(client, "tool_call")
    assert started[0]["kind"] == "read" and started[0]["locations"][0]["path"] == notes
    finished = [u for u in tool_updates(client, "tool_call_update") if u.get("status")]
    assert finished[-1]["status"] == "completed"
    assert "CLIENT-BUFFER" in finished[-1]["content"][0]["content"]["text"]
    assert (workspace / "notes.txt").read_text() == "disk text of the notes\n"


async def test_allowed_edit_goes_through_fs_write(spawn, workspace: Path) -> None:
    app = str(workspace / "app.py")
    client = EditorClient(answer="allow_once")
    script = [
        call("edit_file", path="app.py", old_text="'hello'", new_text="'hello, acp'"),
        "Edited.",
    ]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "edit"}])
    assert result.stop_reason == "end_turn"
    [asked] = client.permissions
    assert [o["kind"] for o in asked["options"]] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    diff = asked["tool_call"]["content"][0]
    assert diff["type"] == "diff" and diff["path"] == app
    assert "'hello, acp'" in diff["newText"]
    assert client.writes == [(app, "def greet():\n    return 'hello, acp'\n")]
    # The edit reached the editor's buffer, not the disk: the client owns the file.
    assert (workspace / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    assert client.text() == "Edited."


async def test_rejected_edit_leaves_the_file_alone(spawn, workspace: Path) -> None:
    client = EditorClient(answer="reject_always")
    script = [
        call("write_file", path="app.py", content="overwritten\n"),
        call("write_file", path="app.py", content="overwritten again\n"),
        "Understood.",
    ]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
    assert result.stop_reason == "end_turn"
    assert len(client.permissions) == 1  # "always reject" holds for the second try
    assert client.writes == []
    assert (workspace / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    failed = [u for u in tool_updates(client, "tool_call_update") if u.get("status") == "failed"]
    assert len(failed) == 2
    assert all("permission denied" in u["content"][0]["content"]["text"] for u in failed)


async def test_unanswered_permission_is_denied_after_the_timeout(spawn, workspace: Path) -> None:
    client = EditorClient(answer="never")
    script = [call("write_file", path="new.txt", content="x\n"), "Gave up on it."]
    async with spawn(script, client, KILN_ACP_PERMISSION_TIMEOUT="0.5") as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
    assert result.stop_reason == "end_turn"
    assert len(client.permissions) == 1
    assert client.writes == [] and not (workspace / "new.txt").exists()
    assert client.text() == "Gave up on it."
    # Reported as a timeout, to the user (thought text) and the model (tool result).
    thought = client.text("agent_thought_chunk")
    assert "timed out" in thought and "declined" not in thought
    (failed,) = [u for u in tool_updates(client, "tool_call_update") if u.get("status")]
    assert "the permission request timed out" in failed["content"][0]["content"]["text"]
    # The diff was shown before the question (the client saw it when asked).
    assert client.diffs_when_asked == [[str(workspace / "new.txt")]]


async def test_without_fs_capability_edits_hit_the_disk(spawn, workspace: Path) -> None:
    client = EditorClient(answer="allow_once")
    script = [call("write_file", path="new.txt", content="from the agent\n"), "Done."]
    async with spawn(script, client) as agent:
        await agent.start(fs=False)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
    assert result.stop_reason == "end_turn"
    assert client.reads == [] and client.writes == []
    assert (workspace / "new.txt").read_text() == "from the agent\n"


async def test_cancel_mid_turn_returns_cancelled(spawn, workspace: Path) -> None:
    client = EditorClient()
    script = [
        call("todo_write", items=[{"id": "1", "content": "wait", "status": "in_progress"}]),
        {"sleep": 60},
        "never reached",
    ]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        turn = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "slow"}])
        )
        await client.wait_for(lambda u: u["sessionUpdate"] == "plan")
        with pytest.raises(RequestError) as busy:
            await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "again"}])
        assert busy.value.code == -31002
        await agent.conn.cancel(session_id=sid)
        result = await asyncio.wait_for(turn, 60)
        assert result.stop_reason == "cancelled"
        assert "never reached" not in client.text()
        # The session is still usable after the cancel.
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert sid in [s.session_id for s in listed.sessions]


@pytest.mark.slow
async def test_load_session_replays_the_conversation(spawn, workspace: Path) -> None:
    first = EditorClient()
    script = [call("read_file", path="notes.txt"), "The notes are about disks."]
    async with spawn(script, first) as agent:
        await agent.start(fs=False)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        await agent.conn.prompt(
            session_id=sid, prompt=[{"type": "text", "text": "summarise notes.txt"}]
        )

    second = EditorClient()
    async with spawn(["Still here."], second) as agent:
        await agent.start(fs=False)
        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
        # (the slash commands follow the answer: not part of the replay)
        replayed = [u for u in second.updates if u["sessionUpdate"] != "available_commands_update"]
        kinds = [u["sessionUpdate"] for u in replayed]
        assert kinds == [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
        ]
        assert replayed[0]["content"]["text"] == "summarise notes.txt"
        assert replayed[1]["kind"] == "read" and replayed[1]["title"] == "read_file: notes.txt"
        assert replayed[1]["locations"] == [{"path": str(workspace / "notes.txt")}]
        assert "disk text of the notes" in replayed[2]["content"][0]["content"]["text"]
        assert replayed[3]["content"]["text"] == "The notes are about disks."
        assert all(u["_session"] == sid for u in replayed)
        result = await agent.conn.prompt(
            session_id=sid, prompt=[{"type": "text", "text": "still there?"}]
        )
        assert result.stop_reason == "end_turn"
        assert second.text().endswith("Still here.")


async def test_bad_requests_get_json_rpc_errors_and_the_server_lives(
    spawn, workspace: Path
) -> None:
    client = EditorClient()
    async with spawn(["Fine."], client) as agent:
        await agent.start()
        with pytest.raises(RequestError) as unknown:
            await agent.conn.prompt(session_id="nope", prompt=[{"type": "text", "text": "hi"}])
        assert "nope" in str(unknown.value) and unknown.value.code == -32002  # resource not found
        with pytest.raises(RequestError) as relative:
            await agent.conn.new_session(cwd="relative/dir")
        assert relative.value.code == -32602
        with pytest.raises(RequestError) as no_provider:
            await agent.conn.new_session(cwd=str(workspace), kiln={"provider": "nope"})
        assert no_provider.value.code == -32602 and "nope" in str(no_provider.value)
        assert "anthropic" in str(no_provider.value)  # the known providers are named
        with pytest.raises(RequestError) as missing:
            await agent.conn.load_session(cwd=str(workspace), session_id="20990101-000000-dead")
        assert "no session" in str(missing.value)
        raw = agent.conn._conn  # the SDK's JSON-RPC connection: send what no typed call would
        with pytest.raises(RequestError) as malformed:
            await raw.send_request("session/prompt", {"sessionId": 3, "prompt": "not a list"})
        assert malformed.value.code == -32602
        with pytest.raises(RequestError) as no_method:
            await raw.send_request("session/teleport", {})
        assert no_method.value.code == -32601
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        with pytest.raises(RequestError) as bad_block:
            await raw.send_request(
                "session/prompt",
                {"sessionId": sid, "prompt": [{"type": "image", "data": "", "mimeType": "x"}]},
            )
        assert bad_block.value.code == -32602
        with pytest.raises(RequestError) as outside:
            link = {"type": "resource_link", "uri": "file:///etc/hosts", "name": "hosts"}
            await raw.send_request("session/prompt", {"sessionId": sid, "prompt": [link]})
        assert outside.value.code == -31004  # docs/acp.md: outside the workspace
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "hi"}])
        assert result.stop_reason == "end_turn"
        assert agent.process.returncode is None
    assert "Traceback" not in agent.stderr.read_text()


@pytest.mark.slow
async def test_client_buffer_reaches_the_model_over_the_anthropic_wire(
    spawn, workspace: Path
) -> None:

    notes = str(workspace / "notes.txt")
    client = EditorClient(buffers={notes: "WIRE-CHECK unsaved line\n"})
    steps = [call("read_file", path="notes.txt"), "Read it."]
    with WireServer(steps) as wire:
        env = {"KILN_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": wire.url}
        async with spawn([], client, ANTHROPIC_API_KEY="test", **env) as agent:
            await agent.start()
            sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
            result = await agent.conn.prompt(
                session_id=sid, prompt=[{"type": "text", "text": "read notes.txt"}]
            )
        sent = json.dumps(wire.bodies("/v1/messages")[-1])
    assert result.stop_reason == "end_turn"
    assert "WIRE-CHECK unsaved line" in sent and "disk text of the notes" not in sent
    assert client.text() == "Read it."


async def test_edit_of_a_buffer_changed_meanwhile_is_not_written(spawn, workspace: Path) -> None:
    app = str(workspace / "app.py")
    original = "def greet():\n    return 'hello'\n"
    client = EditorClient(
        buffers={app: original}, typed_after_read={app: original + "# the user typed this\n"}
    )
    script = [
        call("edit_file", path="app.py", old_text="'hello'", new_text="'hi'"),
        {"match": "changed while the edit was proposed", "text": "I will read it again."},
    ]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "edit"}])
    assert result.stop_reason == "end_turn"
    assert len(client.permissions) == 1  # asked, allowed, then found stale at write time
    assert client.writes == []
    assert client.buffers[app].endswith("# the user typed this\n")
    assert client.text() == "I will read it again."


async def test_attached_files_use_the_client_and_provider_errors_are_shown(
    spawn, workspace: Path
) -> None:
    notes = workspace / "notes.txt"
    client = EditorClient(buffers={str(notes): "LINKED-BUFFER text\n"})
    script = [
        {"match": "explode", "raise": "bad_request", "message": "the model refused the request"},
        {"match": "re:LINKED-BUFFER[\\s\\S]*EMBEDDED-TEXT", "text": "Both attachments seen."},
        {"text": "Attachments missing."},
    ]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        attached = [
            {"type": "text", "text": "compare these"},
            {"type": "resource_link", "name": "notes.txt", "uri": notes.as_uri()},
            {
                "type": "resource",
                "resource": {"uri": (workspace / "app.py").as_uri(), "text": "EMBEDDED-TEXT"},
            },
        ]
        first = await agent.conn.prompt(session_id=sid, prompt=attached)
        assert first.stop_reason == "end_turn"
        assert client.text() == "Both attachments seen."
        second = await agent.conn.prompt(
            session_id=sid, prompt=[{"type": "text", "text": "explode"}]
        )
        assert second.stop_reason == "end_turn"
        assert "Error: the model refused the request" in client.text()


async def test_allow_always_is_asked_once_per_session(spawn, workspace: Path) -> None:
    client = EditorClient(answer="allow_always")
    script = [
        call("write_file", path="one.txt", content="1\n"),
        call("write_file", path="two.txt", content="2\n"),
        "Both written.",
    ]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
    assert result.stop_reason == "end_turn"
    assert len(client.permissions) == 1
    assert [path for path, _ in client.writes] == [
        str(workspace / "one.txt"),
        str(workspace / "two.txt"),
    ]


async def test_cancel_while_the_permission_dialog_is_open(spawn, workspace: Path) -> None:
    client = EditorClient(answer="never")
    script = [call("write_file", path="new.txt", content="x\n"), "never reached"]
    async with spawn(script, client, KILN_ACP_PERMISSION_TIMEOUT="600") as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        turn = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "write"}])
        )
        await asyncio.wait_for(client.asked.wait(), 60)
        await agent.conn.cancel(session_id=sid)
        result = await asyncio.wait_for(turn, 60)
    assert result.stop_reason == "cancelled"
    assert client.writes == [] and not (workspace / "new.txt").exists()
    # The write_file call is closed on the wire, not left in_progress.
    (started,) = tool_updates(client, "tool_call")
    ends = [
        u
        for u in tool_updates(client, "tool_call_update")
        if u["toolCallId"] == started["toolCallId"] and u.get("status")
    ]
    assert [u["status"] for u in ends] == ["failed"]
