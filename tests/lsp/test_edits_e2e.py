"""Edits arrive as ``workspace/applyEdit``: approved, rejected, stale, deferred, non-ASCII."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from agent.session_store import SessionStore
from lsp_server.core import STALE_DOCUMENT
from tests.lsp.conftest import running
from tests.lsp.kiln_client import REJECT
from tests.lsp.raw_client import RawServer
from tests.waiting import answer_when

pytestmark = pytest.mark.e2e


def _tool_results(session_id: str) -> list[str]:
    return [
        str(block["content"])
        for message in SessionStore().messages(session_id)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def _edit(path: str, old: str, new: str) -> dict[str, object]:
    return {"name": "edit_file", "input": {"path": path, "old_text": old, "new_text": new}}


async def test_approved_edit_lands_in_the_buffer_and_rejected_one_is_reported(
    workspace: Path, scripted_env: object
) -> None:
    steps = [
        {"match": "one", "text": "", "tool_calls": [_edit("app.py", "hello", "hi")]},
        {"match": "edited", "text": "first done"},
        {"match": "two", "text": "", "tool_calls": [_edit("app.py", "greet", "salute")]},
        {"match": "rejected", "text": "second refused"},
        {"match": "three", "text": "", "tool_calls": [_edit("app.py", "return", "yield")]},
        {"match": "denied", "text": "third denied"},
    ]
    async with running(workspace, scripted_env(steps)) as editor:  # type: ignore[operator]
        uri = editor.open(workspace / "app.py", (workspace / "app.py").read_text())
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]

        # 1. permission allowed, editor applies: the buffer changes, the disk does not.
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "one"})
        assert result["stopReason"] == "end_turn" and result["filesModified"] == ["app.py"]
        asked = editor.permission_requests[0]["toolCall"]
        assert asked["kind"] == "edit" and asked["content"][0]["type"] == "diff"
        assert asked["content"][0]["path"] == str(workspace / "app.py")
        assert "hi" in asked["content"][0]["newText"]
        sent = editor.apply_requests[0]["edit"]["documentChanges"][0]
        assert sent["textDocument"] == {"uri": uri, "version": 1}
        assert sent["edits"][0]["range"]["start"] == {"line": 1, "character": 16}  # 😀 = 2 units
        assert editor.docs[uri].source == 'def greet(name):\n    return "😀 hi " + name\n'
        assert "hello" in (workspace / "app.py").read_text()
        diff = [u for u in editor.updates_for(sid, "tool_call_update") if u.get("kind") == "edit"][
            0
        ]
        assert diff["_meta"]["proposalId"] and diff["content"][0]["oldText"].count("hello") == 1

        # 2. the editor refuses the applyEdit: the model hears "rejected".
        editor.on_apply = lambda params: False
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "two"})
        assert result["stopReason"] == "end_turn", editor.updates_for(sid, "error")
        assert any("rejected" in r for r in _tool_results(sid))
        assert "salute" not in editor.docs[uri].source

        # 3. the user rejects the permission: no applyEdit at all.
        diffs_when_asked: list[list[str]] = []

        def reject(params: dict[str, object]) -> object:
            diffs_when_asked.append(_diff_calls(editor, sid))
            return REJECT

        editor.on_permission = reject
        before = len(editor.apply_requests)
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "three"})
        assert len(editor.apply_requests) == before
        assert editor.updates_for(sid, "refusal")[-1]["tool"] == "edit_file"
        # PROTOCOL.md §5: the diff was on screen before the question, also for a refused edit.
        call_id = editor.permission_requests[-1]["toolCall"]["toolCallId"]
        assert diffs_when_asked == [_diff_calls(editor, sid)] and call_id in diffs_when_asked[0]
        assert _diff_calls(editor, sid).count(call_id) == 1  # announced once


def _diff_calls(editor: object, sid: str) -> list[str]:
    updates = editor.updates_for(sid, "tool_call_update")  # type: ignore[attr-defined]
    return [u["toolCallId"] for u in updates if u.get("kind") == "edit"]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-32"])  # utf-16: the test above
async def test_non_ascii_lines_survive_every_position_encoding(
    workspace: Path, scripted_env: object, encoding: str
) -> None:
    text = "a = 'é😀中'  # x\nb = '😀😀' + 'tail'\n"
    (workspace / "u.py").write_text(text, encoding="utf-8")
    steps = [{"text": "", "tool_calls": [_edit("u.py", "'tail'", "'ok ✓'")]}, "done"]
    async with running(
        workspace,
        scripted_env(steps),
        encoding=encoding,
        settings={"editMode": "auto"},  # type: ignore[operator]
    ) as editor:
        hello = await answer_when(  # workspace/configuration is pulled after initialized
            lambda: editor.request("kiln/hello", {}), lambda h: h["config"]["editMode"] == "auto"
        )
        assert hello["config"]["editMode"] == "auto"
        assert hello["capabilities"]["positionEncoding"] == encoding
        uri = editor.open(workspace / "u.py", text)
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "fix"})
        assert editor.permission_requests == []  # auto edit mode asks nobody
        assert editor.docs[uri].source == "a = 'é😀中'  # x\nb = '😀😀' + 'ok ✓'\n"


async def test_stale_buffer_is_reported_and_new_files_are_created(
    workspace: Path, scripted_env: object
) -> None:
    steps = [
        {"match": "stale", "text": "", "tool_calls": [_edit("app.py", "hello", "hey")]},
        {"match": "changed", "text": "it moved"},
        {
            "match": "create",
            "text": "",
            "tool_calls": [
                {"name": "write_file", "input": {"path": "new/mod.py", "content": "X = 1\n"}}
            ],
        },
        "created",
    ]
    async with running(workspace, scripted_env(steps), options={"editMode": "auto"}) as editor:  # type: ignore[operator]
        uri = editor.open(workspace / "app.py", (workspace / "app.py").read_text())
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        # The user types while the agent is deciding: the editor refuses the old version.
        original = editor.on_apply

        def type_first(params: dict[str, object]) -> bool:
            editor.type_text(uri, editor.docs[uri].source + "# typed meanwhile\n")
            return original(params)

        editor.on_apply = type_first
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "stale"})
        assert any("changed" in r or "stale" in r for r in _tool_results(sid))
        assert (
            "hey" not in editor.docs[uri].source and "# typed meanwhile" in editor.docs[uri].source
        )

        editor.on_apply = original
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "create"})
        ops = editor.apply_requests[-1]["edit"]["documentChanges"]
        assert ops[0]["kind"] == "create" and ops[1]["textDocument"]["version"] is None
        assert (workspace / "new" / "mod.py").read_text() == "X = 1\n"


async def test_deferred_edits_wait_for_resolve_and_annotations_when_supported(
    workspace: Path, scripted_env: object
) -> None:
    steps = [
        {
            "text": "",
            "tool_calls": [
                _edit("app.py", "hello", "howdy"),
                _edit("notes.txt", "café", "thé"),
                {"name": "write_file", "input": {"path": "draft.txt", "content": "draft\n"}},
            ],
        },
        "proposed both",
    ]
    async with running(
        workspace,
        scripted_env(steps),  # type: ignore[operator]
        annotations=True,
        options={"editMode": "deferred", "confirmEdits": True},
    ) as editor:
        uri = editor.open(workspace / "app.py", (workspace / "app.py").read_text())
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "edit"})
        assert result["stopReason"] == "end_turn"
        assert editor.permission_requests == [] and editor.apply_requests == []
        pending = (await editor.request("kiln/edit/list", {"sessionId": sid}))["edits"]
        assert sorted(e["path"] for e in pending) == ["app.py", "draft.txt", "notes.txt"]
        by_path = {e["path"]: e["proposalId"] for e in pending}

        accepted = await editor.request(
            "kiln/edit/resolve", {"proposalId": by_path["app.py"], "decision": "accept"}
        )
        assert accepted["outcome"] == "applied"
        edit = editor.apply_requests[0]["edit"]
        assert edit["changeAnnotations"]["kiln.edit"]["needsConfirmation"] is True
        assert edit["documentChanges"][0]["edits"][0]["annotationId"] == "kiln.edit"
        assert "howdy" in editor.docs[uri].source

        rejected = await editor.request(
            "kiln/edit/resolve", {"proposalId": by_path["draft.txt"], "decision": "reject"}
        )
        assert rejected["outcome"] == "rejected" and not (workspace / "draft.txt").exists()

        (workspace / "notes.txt").write_text("changed on disk\n", encoding="utf-8")
        try:
            await editor.request(
                "kiln/edit/resolve", {"proposalId": by_path["notes.txt"], "decision": "accept"}
            )
            raise AssertionError("a stale proposal was applied")
        except Exception as exc:  # noqa: BLE001
            assert getattr(exc, "code", None) == STALE_DOCUMENT, exc
        assert (workspace / "notes.txt").read_text(encoding="utf-8") == "changed on disk\n"
        assert (await editor.request("kiln/edit/list", {}))["edits"] == []


async def test_an_apply_edit_error_is_not_a_rejection_the_file_is_written(
    workspace: Path, scripted_env: object
) -> None:
    """An editor that answers applyEdit with an error (-32601 here) never saw the edit: the
    allowed edit is written to disk; with unsaved changes in the way the model hears why."""
    from pygls.exceptions import JsonRpcMethodNotFound

    steps = [
        {"match": "go", "text": "", "tool_calls": [_edit("app.py", "greet", "salute")]},
        {"match": "edited app.py", "text": "done"},
        {"match": "two", "text": "", "tool_calls": [_edit("notes.txt", "typed", "tea")]},
        {"match": "unsaved changes", "text": "please save"},
    ]
    async with running(workspace, scripted_env(steps)) as editor:  # type: ignore[operator]
        editor.open(workspace / "app.py", (workspace / "app.py").read_text())
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]

        def unsupported(params: object) -> bool:
            raise JsonRpcMethodNotFound.of("workspace/applyEdit")

        editor.on_apply = unsupported
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "go"})
        assert result["stopReason"] == "end_turn" and result["filesModified"] == ["app.py"]
        assert len(editor.apply_requests) == 1
        assert "salute" in (workspace / "app.py").read_text(encoding="utf-8")
        notes = editor.open(workspace / "notes.txt", "typed, not saved\n", language="plaintext")
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "two"})
        assert result["stopReason"] == "end_turn"
        assert (workspace / "notes.txt").read_text(encoding="utf-8") == "café au lait\n"
        assert editor.docs[notes].source == "typed, not saved\n"
        results = _tool_results(sid)
        assert not any("rejected" in r for r in results), results
        assert "unsaved changes" in results[-1]


async def test_a_client_without_apply_edit_gets_edits_on_disk(
    workspace: Path, scripted_env: object
) -> None:
    steps = [
        {"match": "go", "text": "", "tool_calls": [_edit("app.py", "greet", "salute")]},
        {"match": "edited app.py", "text": "done"},
    ]
    env = scripted_env(steps)  # type: ignore[operator]
    async with running(workspace, env, apply_edit=False, options={"mode": "auto-edit"}) as editor:
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "go"})
        assert result["stopReason"] == "end_turn"
        assert editor.apply_requests == []  # never sent to a client that did not advertise it
        assert "salute" in (workspace / "app.py").read_text(encoding="utf-8")
        hello = await editor.request("kiln/hello")
        assert hello["capabilities"]["applyEdit"] is False


async def _slow_editor_session(server: RawServer, workspace: Path) -> str:
    """Initialise ``server`` as an editor that applies edits but may answer after the 1 s
    `permissionTimeout` (yolo, auto edits); the id of a new session."""
    await server.initialize(
        workspace,
        capabilities={"workspace": {"applyEdit": True}},
        initializationOptions={"mode": "yolo", "editMode": "auto", "permissionTimeout": 1},
    )
    return str((await server.request("new", "kiln/session/new", {}))["result"]["sessionId"])


@asynccontextmanager
async def _edit_left_unanswered(
    workspace: Path, scripted_env: Any, steps: list[dict[str, Any]]
) -> AsyncIterator[tuple[RawServer, str, dict[str, Any]]]:
    """A raw client that advertises `workspace.applyEdit` and does not answer it (within a
    1 s `permissionTimeout`); yields it, the session and the answer to its prompt "go"."""
    server = await RawServer.start(workspace, scripted_env(steps))
    try:
        sid = await _slow_editor_session(server, workspace)
        answer = await server.request(
            "go", "kiln/session/prompt", {"sessionId": sid, "prompt": "go"}
        )
        assert answer["result"]["stopReason"] == "end_turn", answer
        yield server, sid, answer
    finally:
        await server.close()


async def test_an_edit_the_editor_never_answers_does_not_hold_the_turn(
    workspace: Path, scripted_env: Any
) -> None:
    """A client that advertises `workspace.applyEdit` and never answers it held the turn (and
    its prompt request) for ever. The edit is now withdrawn after `permissionTimeout` with a
    `$/cancelRequest` naming it, the model hears the edit is not known to be applied, nothing
    is written to the disk, and the turn goes on."""
    steps = [
        {"match": "go", "text": "", "tool_calls": [_edit("app.py", "hello", "hi")]},
        {"match": "not known", "text": "told"},
    ]
    async with _edit_left_unanswered(workspace, scripted_env, steps) as (server, sid, answer):
        assert answer["result"]["filesModified"] == [], answer
    edit = next(m for m in server.messages if m.get("method") == "workspace/applyEdit")
    cancels = [m["params"] for m in server.messages if m.get("method") == "$/cancelRequest"]
    assert cancels == [{"id": edit["id"]}], cancels
    said = [r for r in _tool_results(sid) if "did not answer the edit of app.py" in r]
    assert said and "no answer within 1 s" in said[0], _tool_results(sid)
    assert "hello" in (workspace / "app.py").read_text(encoding="utf-8")


async def test_an_edit_answered_after_it_was_withdrawn_reaches_the_model(
    workspace: Path, scripted_env: Any
) -> None:
    """The editor answered `applied: true` after the edit was withdrawn (the user confirmed it
    late): before, the model kept believing the edit was not known to be applied. The next
    request it gets now says the edit landed, in the same words each time (cache-stable)."""
    steps = [
        {"match": "go", "text": "", "tool_calls": [_edit("app.py", "hello", "hi")]},
        {"match": "not known", "text": "told"},
        {"match": "applied your edit to app.py after all", "text": "heard it landed"},
        {"match": "next", "text": "did not hear"},
    ]
    async with _edit_left_unanswered(workspace, scripted_env, steps) as (server, sid, _):
        edit = next(m for m in server.messages if m.get("method") == "workspace/applyEdit")
        (workspace / "app.py").write_text(
            (workspace / "app.py").read_text(encoding="utf-8").replace("hello", "hi"),
            encoding="utf-8",
        )  # what the editor did when the user said yes
        server.send({"jsonrpc": "2.0", "id": edit["id"], "result": {"applied": True}})
        await server.wait_for(
            lambda m: (
                m.get("method") == "kiln/session/update"
                and "applied the edit of app.py after" in m["params"]["update"].get("text", "")
            )
        )
        answer = await server.request(
            "next", "kiln/session/prompt", {"sessionId": sid, "prompt": "next"}
        )
        assert answer["result"]["stopReason"] == "end_turn", answer
    said = [
        u["params"]["update"]["content"]["text"]
        for u in server.messages
        if u.get("method") == "kiln/session/update"
        and u["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    ]
    assert "heard it landed" in "".join(said), said


async def test_an_edit_applied_late_counts_as_modified_and_its_note_outlives_the_server(
    workspace: Path, scripted_env: Any, tmp_path: Path
) -> None:
    """The editor applied a withdrawn edit while the turn went on: the turn's `filesModified`
    left it out, and the note for the model lived only in the server's memory, so a session
    resumed by another server never heard the edit landed. Both are now stored at once."""
    release = tmp_path / "release"
    steps = [
        {"match": "go", "text": "", "tool_calls": [_edit("app.py", "hello", "hi")]},
        {"match": "not known", "wait_for": str(release)},
        "told",
    ]
    server = await RawServer.start(workspace, scripted_env(steps))
    try:
        sid = await _slow_editor_session(server, workspace)
        server.request_nowait("go", "kiln/session/prompt", {"sessionId": sid, "prompt": "go"})
        await server.wait_for(lambda m: m.get("method") == "$/cancelRequest")
        edit = next(m for m in server.messages if m.get("method") == "workspace/applyEdit")
        server.send({"jsonrpc": "2.0", "id": edit["id"], "result": {"applied": True}})
        await server.wait_for(
            lambda m: "applied the edit of app.py after" in json.dumps(m.get("params", ""))
        )
        release.write_text("the late answer is in", encoding="utf-8")
        answer = (await server.response("go"))["result"]
        assert answer["stopReason"] == "end_turn" and answer["filesModified"] == ["app.py"]
        assert await server.shutdown_and_exit() == 0
    finally:
        await server.close()

    heard = [
        {"match": "applied your edit to app.py after all", "text": "heard it landed"},
        {"match": "next", "text": "did not hear"},
    ]
    async with running(workspace, scripted_env(heard)) as editor:
        await editor.request("kiln/session/load", {"sessionId": sid, "replay": False})
        shown = await editor.request("kiln/context/show", {"sessionId": sid})
        assert shown["filesModified"] == ["app.py"], shown
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "next"})
        said = editor.updates_for(sid, "agent_message_chunk")
        assert "".join(u["content"]["text"] for u in said) == "heard it landed"
