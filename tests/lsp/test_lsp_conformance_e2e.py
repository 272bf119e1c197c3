"""`kiln lsp` driven as an unusual client would drive it: requests where LSP has notifications,
odd but legal JSON-RPC. The common framing and lifecycle cases are in test_jsonrpc_e2e.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from indexer import Index
from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer
from tests.lsp.test_index_locked_e2e import _hold_write_lock

pytestmark = pytest.mark.e2e


async def test_an_lsp_notification_sent_with_an_id_is_answered(
    workspace: Path, kiln_home: Path
) -> None:
    """JSON-RPC: a message with an id is a request and is owed an answer. pygls read
    `textDocument/didOpen`, `initialized`, `$/cancelRequest`… with an id as notifications and
    the id went unanswered (a client waiting on it hangs); it is -32601, as vscode-jsonrpc
    answers a request for a method it only has a notification handler for."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        doc = {"uri": (workspace / "app.py").as_uri(), "languageId": "python", "version": 1}
        sent = {
            1: ("textDocument/didOpen", {"textDocument": {**doc, "text": "x = 1\n"}}),
            2: ("$/cancelRequest", {"id": 99}),
            3: ("initialized", {}),
            4: ("$/setTrace", {"value": "off"}),
            "five": ("workspace/didChangeConfiguration", {"settings": {}}),
        }
        for msg_id, (method, params) in sent.items():
            reply = await server.request(msg_id, method, params)
            assert reply.get("error", {}).get("code") == -32601, reply
            assert reply["error"]["message"] == f"{method} is a notification: send it without an id"
        assert (await server.request(6, "kiln/hello"))["result"]["protocolVersion"] == 1
        server.request_nowait(1.5, "kiln/hello")  # LSP ids are integers or strings
        refused = await server.wait_for(lambda m: m.get("id") is None and "error" in m)
        assert refused["error"]["code"] == -32600, refused
        assert refused["error"]["message"] == "Invalid request: id must be an integer or a string"
        assert (await server.request(7, "shutdown"))["result"] is None
        server.notify("exit")
        assert await server.exit_code() == 0
    finally:
        await server.close()
    assert "Traceback" not in server.stderr.decode(errors="replace")


async def test_shutdown_during_indexing_ends_the_progress_before_answering(
    workspace: Path, kiln_home: Path
) -> None:
    """A `shutdown` while the first index scan ran: `$/progress` reports kept coming after the
    answer and the begun progress never got its `end`. Now the progress ends (before the
    answer) and nothing follows the answer. Another process holds the index's write lock, so the
    scan is still running when the shutdown comes: left to itself it read the 1,000 files in
    about a second, and a loaded machine's editor answered the progress token after that."""
    (workspace / "app.py").write_text("def greet(name):\n    return name\n", encoding="utf-8")
    with Index(workspace) as idx:
        idx.update()
    many = workspace / "many"
    many.mkdir()
    for n in range(1000):
        (many / f"m{n}.py").write_text(f"def f{n}():\n    return {n}\n", encoding="utf-8")
    holder = _hold_write_lock(workspace / ".kiln" / "index.db")
    server = await RawServer.start(workspace, server_env(kiln_home, KILN_INDEX_BUSY_TIMEOUT="300"))
    try:
        await server.initialize(workspace, capabilities={"window": {"workDoneProgress": True}})
        create = await server.wait_for(
            lambda m: m.get("method") == "window/workDoneProgress/create"
        )
        server.send({"jsonrpc": "2.0", "id": create["id"], "result": None})
        token = create["params"]["token"]
        await server.wait_for(
            lambda m: m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "begin"
        )
        assert (await server.request("status", "kiln/index/status"))["result"][
            "state"
        ] == "indexing"
        assert (await server.request("bye", "shutdown"))["result"] is None
        server.notify("exit")
        assert await server.exit_code() == 0  # the scan stopped with the server
    finally:
        holder.communicate("\n", timeout=60)
        await server.close()
    seen = [
        m["params"]["value"]["kind"] if m.get("method") == "$/progress" else "answer"
        for m in server.messages
        if m.get("method") == "$/progress" or m.get("id") == "bye"
    ]
    assert seen[0] == "begin" and seen[-2:] == ["end", "answer"], seen
    assert seen.count("end") == 1
    ended = [
        m["params"] for m in server.messages
        if m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "end"
    ]  # fmt: skip
    assert ended[0]["token"] == token


def _indexed_in(db: Path, folder: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM files WHERE path LIKE ?",
                                (f"{folder}/%",)).fetchone()[0])  # fmt: skip
    finally:
        conn.close()


async def test_shutdown_while_the_first_scan_reads_files_stops_it_and_the_next_start_resumes(
    workspace: Path, kiln_home: Path
) -> None:
    """`shutdown` while the first scan reads files (no lock held: the scan is not waiting):
    the scan stops at its next file, the process exits, and the next start finds a whole index
    and indexes the rest. The shutdown goes as soon as the progress reports its first
    percentage, with 4,000 files still mostly unread."""
    total = 4000
    many = workspace / "many"
    many.mkdir()
    for n in range(total):
        (many / f"m{n}.py").write_text(f"def f{n}():\n    return {n}\n", encoding="utf-8")
    caps = {"window": {"workDoneProgress": True}}
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace, capabilities=caps)
        create = await server.wait_for(
            lambda m: m.get("method") == "window/workDoneProgress/create"
        )
        server.send({"jsonrpc": "2.0", "id": create["id"], "result": None})
        await server.wait_for(
            lambda m: (
                m.get("method") == "$/progress"
                and m["params"]["value"]["kind"] == "report"
                and 0 < m["params"]["value"]["percentage"] < 100
            )
        )
        assert await server.shutdown_and_exit() == 0
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]
    db = workspace / ".kiln" / "index.db"
    assert _indexed_in(db, "many") < total  # stopped, not finished
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()

    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace)
        status = await server.index_until(lambda s: s["state"] == "ready", timeout=300)
        assert status["files"] >= total, status
    finally:
        await server.close()
    assert _indexed_in(db, "many") == total


async def test_indexing_does_not_wait_for_the_progress_token(
    workspace: Path, kiln_home: Path
) -> None:
    """A client that never answers `window/workDoneProgress/create`: the first scan waited
    5 s for the answer before it started (and said "no progress token" when it gave up).
    The scan now starts at once and finishes with the request still unanswered; progress on
    a token may only follow the answer, so none is sent, not even once it comes late."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace, capabilities={"window": {"workDoneProgress": True}})
        create = await server.wait_for(
            lambda m: m.get("method") == "window/workDoneProgress/create"
        )
        await server.index_until(lambda s: s["state"] == "ready" and s["files"] >= 1)
        logs = [
            m["params"]["message"]
            for m in server.messages
            if m.get("method") == "window/logMessage"
        ]
        assert not [line for line in logs if "progress token" in line], logs
        server.send({"jsonrpc": "2.0", "id": create["id"], "result": None})  # late
        assert (await server.request("after", "kiln/hello"))["result"]["protocolVersion"] == 1
        assert (await server.request("bye", "shutdown"))["result"] is None
        server.notify("exit")
        assert await server.exit_code() == 0
    finally:
        await server.close()
    assert not [m for m in server.messages if m.get("method") == "$/progress"], server.messages


async def test_a_malformed_answer_to_a_server_request_is_an_error_answer(
    workspace: Path, scripted_env: Any
) -> None:
    """A client's answer that pygls could not read (`workspace/applyEdit` answered `{}`, a
    permission request answered without a result) was dropped, and the turn waited for it
    forever. It is now an error answer: the edit, already allowed, is written by the server
    (PROTOCOL.md §5), and the permission request fails without waiting for the timeout."""
    edit = {
        "name": "edit_file",
        "input": {"path": "notes.txt", "old_text": "café", "new_text": "tea"},
    }
    app = {
        "name": "edit_file",
        "input": {"path": "app.py", "old_text": "greet", "new_text": "hail"},
    }
    steps = [
        {"match": "edit", "text": "", "tool_calls": [edit]},
        {"match": "edit", "text": "edited"},
        {"match": "app.py", "text": "", "tool_calls": [app]},
        {"match": "app.py", "text": "renamed"},
        {"match": "run", "text": "", "tool_calls": [{"name": "run_command", "input": {"command": "echo hi"}}]},
        {"match": "run", "text": "refused"},
    ]  # fmt: skip
    server = await RawServer.start(workspace, scripted_env(steps))
    try:
        caps = {"workspace": {"applyEdit": True, "workspaceEdit": {"documentChanges": True}}}
        options = {"index": False, "editMode": "auto"}
        await server.initialize(workspace, capabilities=caps, initializationOptions=options)
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        server.request_nowait("edit", "kiln/session/prompt", {"sessionId": sid, "prompt": "edit"})
        apply = await server.wait_for(lambda m: m.get("method") == "workspace/applyEdit")
        server.send({"jsonrpc": "2.0", "id": apply["id"], "result": {}})  # no "applied"
        assert (await server.response("edit"))["result"]["stopReason"] == "end_turn"
        assert (workspace / "notes.txt").read_text(encoding="utf-8") == "tea au lait\n"
        # An answer without "jsonrpc": "2.0" was answered -32600 under the server's own request
        # id (a reply to a reply) and the turn waited for ever.
        server.request_nowait(
            "write", "kiln/session/prompt", {"sessionId": sid, "prompt": "app.py"}
        )
        apply = await server.wait_for(
            lambda m: m.get("method") == "workspace/applyEdit" and m["id"] != apply["id"]
        )
        server.send({"id": apply["id"], "result": {"applied": False}})
        assert (await server.response("write"))["result"]["stopReason"] == "end_turn"
        assert (workspace / "app.py").read_text(encoding="utf-8").startswith("def hail(name):")

        server.request_nowait("run", "kiln/session/prompt", {"sessionId": sid, "prompt": "run"})
        asked = await server.wait_for(lambda m: m.get("method") == "kiln/session/requestPermission")
        server.send({"jsonrpc": "2.0", "id": asked["id"]})  # neither a result nor an error
        assert (await server.response("run"))["result"]["stopReason"] == "end_turn"
    finally:
        await server.close()
    reasons = [
        m["params"]["update"]["reason"]
        for m in server.messages
        if m.get("method") == "kiln/session/update"
        and m["params"]["update"]["sessionUpdate"] == "refusal"
    ]
    assert len(reasons) == 1 and reasons[0].startswith("the permission request failed: malformed")
    server_ids = {m["id"] for m in server.messages if "method" in m and "id" in m}
    replies = [m for m in server.messages if "method" not in m and m.get("id") in server_ids]
    assert replies == [], replies  # answers are never answered


async def test_a_content_length_counted_in_characters_costs_only_its_own_message(
    workspace: Path, kiln_home: Path
) -> None:
    """A client that counts characters instead of bytes sends a Content-Length too short for a
    body with "é". The tail of that body ran into the next message's header, so the next
    request was lost as well (answered only by an `id: null` error, its own id never). Now the
    reader finds the next header: the bad body is -32700 and the next request is answered."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        body = '{"jsonrpc": "2.0", "id": "café", "method": "kiln/hello"}'
        assert server.proc.stdin is not None
        server.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body.encode())
        next_one = await server.request("next", "kiln/hello")
        assert next_one["result"]["protocolVersion"] == 1, next_one
    finally:
        await server.close()
    nulls = [m["error"]["code"] for m in server.messages if m.get("id") is None and "error" in m]
    assert nulls == [-32700], server.messages


async def test_a_permission_answer_that_is_not_one_is_a_failed_request(
    workspace: Path, scripted_env: Any
) -> None:
    """`{}` or `null` as the result of `kiln/session/requestPermission` chose nothing: it was
    reported as "the user declined"; it is a failed request (PROTOCOL.md §4), as in `kiln acp`."""
    run = {"text": "", "tool_calls": [{"name": "run_command", "input": {"command": "echo hi"}}]}
    steps = [{"match": "go", **run}, {"match": "go", **run}, "a", "b"]
    server = await RawServer.start(workspace, scripted_env(steps))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        asked_ids: set[str] = set()
        for n, answer in enumerate(({}, None)):
            server.request_nowait(n, "kiln/session/prompt", {"sessionId": sid, "prompt": "go"})
            asked = await server.wait_for(
                lambda m: (
                    m.get("method") == "kiln/session/requestPermission" and m["id"] not in asked_ids
                )
            )
            asked_ids.add(asked["id"])
            server.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})
            assert (await server.response(n))["result"]["stopReason"] == "end_turn"
    finally:
        await server.close()
    reasons = [
        m["params"]["update"]["reason"]
        for m in server.messages
        if m.get("method") == "kiln/session/update"
        and m["params"]["update"]["sessionUpdate"] == "refusal"
    ]
    failed = "the permission request failed: the client's answer is not a permission response"
    assert reasons == [failed, failed], reasons


async def test_a_late_answer_to_a_request_the_server_gave_up_on_is_dropped(
    workspace: Path, kiln_home: Path
) -> None:
    """`workspace/configuration` and `client/registerCapability` are waited for 5 s. An answer
    that came later ended the server (exit 0, as if the client had left, nothing said): pygls
    set it on the abandoned request, and the error ended the read loop. It is now dropped
    with a log line, and the server goes on serving."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    caps = {
        "workspace": {"configuration": True, "didChangeWatchedFiles": {"dynamicRegistration": True}}
    }
    try:
        await server.initialize(workspace, capabilities=caps)
        asked = [
            await server.wait_for(lambda m, method=method: m.get("method") == method)
            for method in ("workspace/configuration", "client/registerCapability")
        ]
        for given_up in ("workspace/configuration failed", "file watching not registered"):
            await server.wait_for(
                lambda m, text=given_up: (
                    m.get("method") == "window/logMessage" and text in m["params"]["message"]
                )
            )
        server.send({"jsonrpc": "2.0", "id": asked[0]["id"], "result": [{"mode": "yolo"}]})
        server.send({"jsonrpc": "2.0", "id": asked[1]["id"], "error": {"code": 1, "message": "x"}})
        assert (await server.request("hello", "kiln/hello"))["result"]["config"]["mode"] == "ask"
        assert (await server.request("bye", "shutdown"))["result"] is None
        server.notify("exit")
        assert await server.exit_code() == 0
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")


async def test_watching_and_indexing_do_not_wait_for_the_configuration_answer(
    workspace: Path, kiln_home: Path
) -> None:
    """The file-watcher registration and the first scan waited for the answer to
    `workspace/configuration` (up to 5 s), though neither depends on it: a client that answers
    it only later (or never) had no watching and no index meanwhile. Both now start at once,
    and the settings apply when the answer comes."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    caps = {
        "workspace": {"configuration": True, "didChangeWatchedFiles": {"dynamicRegistration": True}}
    }
    try:
        await server.initialize(workspace, capabilities=caps)
        asked = await server.wait_for(lambda m: m.get("method") == "workspace/configuration")
        register = await server.wait_for(lambda m: m.get("method") == "client/registerCapability")
        server.send({"jsonrpc": "2.0", "id": register["id"], "result": None})
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": [{"mode": "yolo"}]})
        status = await server.index_until(lambda s: s["state"] == "ready")
        assert status["files"] >= 1, status
        hello = (await server.request("hello", "kiln/hello"))["result"]
        assert hello["config"]["mode"] == "yolo", hello
    finally:
        await server.close()


async def test_a_cancelled_shutdown_still_answers_its_result(
    workspace: Path, kiln_home: Path
) -> None:
    """`$/cancelRequest` right behind `shutdown`: the server shut down all the same (later
    requests -32600) but answered the shutdown -32800, so the client believed it had not. A
    shutdown once received is carried out and answered with its result."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        server.request_nowait("bye", "shutdown")
        server.notify("$/cancelRequest", {"id": "bye"})
        assert await server.response("bye") == {"jsonrpc": "2.0", "id": "bye", "result": None}
        after = await server.request("after", "kiln/hello")
        assert after["error"]["code"] == -32600, after
        server.notify("exit")
        assert await server.exit_code() == 0
    finally:
        await server.close()
    assert len([m for m in server.messages if m.get("id") == "bye"]) == 1, server.messages
