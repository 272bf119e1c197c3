"""`kiln lsp` against JSON-RPC 2.0 and the LSP 3.17 handshake, byte for byte over stdio: framing,
error codes, session folders. Requests the server withdraws or the client cancels are in
test_jsonrpc_cancel_e2e.py; how the process ends (exit, shutdown, signals, a vanished editor)
is in test_process_e2e.py."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer, error_code, frame

pytestmark = pytest.mark.e2e


def documented_methods() -> list[str]:
    """The `methods` of kiln/hello as lsp_server/PROTOCOL.md §3 lists them."""
    text = (Path(__file__).resolve().parents[2] / "lsp_server" / "PROTOCOL.md").read_text()
    section = text[text.index("## 3. Discovery") :]
    listed = section[section.index('"methods": [') : section.index('"clientMethods"')]
    return re.findall(r'"(kiln/[a-zA-Z/]+)"', listed)


async def test_framing_errors_lifecycle_order_and_omitted_params(
    workspace: Path, kiln_home: Path
) -> None:
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        # Before initialize: requests get -32002, notifications are dropped.
        assert error_code(await server.request(1, "kiln/hello")) == -32002
        assert error_code(await server.request(2, "textDocument/hover", {})) == -32002
        server.notify("kiln/session/cancel", {"sessionId": "x"})
        # Malformed messages get an answer with id null; the server keeps serving.
        server.send_bytes(b'{"jsonrpc": "2.0", "id": 3, "method": ')
        server.send_bytes(b"[1, 2]")
        server.send_bytes(b"\xff\xfe not utf-8")
        server.send({"jsonrpc": "1.0", "id": 4, "method": "kiln/hello"})
        server.send_bytes(b"[" * 100_000 + b"]" * 100_000)  # deeper than the parser's stack
        server.send({"jsonrpc": "2.0", "id": 5, "method": 42})
        await server.wait_for(lambda m: m.get("id") == 5)
        nulls = [m["error"]["code"] for m in server.messages if m.get("id") is None]
        assert nulls == [-32700, -32600, -32700, -32700]
        assert error_code(await server.response(4)) == -32600
        assert error_code(await server.response(5)) == -32600

        bad_init = await server.request("bad-init", "initialize", {"processId": "abc"})
        assert error_code(bad_init) == -32602  # unreadable: the client may send a good one
        result = await server.initialize(workspace)
        kiln = result["capabilities"]["experimental"]["kiln"]
        assert result["capabilities"]["hoverProvider"] is True
        assert "kiln/session/prompt" in kiln["methods"] and kiln["protocolVersion"] == 1
        assert kiln["methods"] == documented_methods()  # PROTOCOL.md §3 lists them all
        assert error_code(await server.request(6, "initialize", {"capabilities": {}})) == -32600

        # params omitted (allowed by JSON-RPC) on every kind of kiln/* method.
        hello = await server.request(7, "kiln/hello")
        assert hello["result"]["capabilities"]["methods"] == kiln["methods"]
        assert "sessions" in (await server.request(8, "kiln/session/list"))["result"]
        assert "state" in (await server.request(9, "kiln/index/status"))["result"]
        missing = await server.request(10, "kiln/session/prompt")
        assert error_code(missing) == -32602 and "sessionId" in missing["error"]["message"]
        server.notify("kiln/session/cancel")  # a notification without params: logged, no reply
        server.notify("initialized", {})  # a repeated one changes nothing
        assert (await server.request(11, "kiln/hello", None))["result"]["protocolVersion"] == 1
        listed = await server.request(17, "kiln/session/list", {"someFutureField": 1})
        assert listed["result"] == {"sessions": []}  # unknown keys are ignored
        bad_hover = await server.request(12, "textDocument/hover", {"textDocument": 3})
        assert error_code(bad_hover) == -32602
        for uri in (
            (workspace / "missing.py").as_uri(),
            "untitled:Untitled-9",
            "file:///etc/hosts",
        ):
            unopened = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
            hover = await server.request(f"hover-{uri}", "textDocument/hover", unopened)
            assert hover.get("result", "error") is None, hover  # not open: nothing, no -32603
        assert error_code(await server.request(13, "kiln/no/such")) == -32601
        # LSP: unknown notifications are never answered ($/ ones may be ignored, and a
        # notification has no reply anyway); an unknown $/ *request* is still -32601.
        server.notify("$/kiln.noSuchNotification", {"x": 1})
        server.notify("kiln/noSuchNotification", {"x": 1})
        server.notify("$/cancelRequest", {"id": "never-sent"})
        assert error_code(await server.request(18, "$/noSuchRequest", {})) == -32601
        # Notifications that cannot be read or that fail are logged, never shown as popups.
        server.notify("textDocument/didOpen", {"textDocument": "nope"})
        unknown = {"uri": (workspace / "never-opened.py").as_uri(), "version": 2}
        change = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "x"}  # fmt: skip
        server.notify(
            "textDocument/didChange", {"textDocument": unknown, "contentChanges": [change]}
        )
        assert (await server.request(16, "kiln/hello"))["result"]["protocolVersion"] == 1

        assert (await server.request(14, "shutdown"))["result"] is None
        after = await server.request(15, "kiln/hello")
        assert error_code(after) == -32600
        server.notify("exit")
        assert await server.exit_code() == 0
    finally:
        await server.close()
    methods = [m.get("method") for m in server.messages]
    assert "window/showMessage" not in methods  # no popups for protocol mistakes
    ids = {m.get("id") for m in server.messages if "method" not in m}
    hovers = {i for i in ids if str(i).startswith("hover-")}
    assert ids - hovers <= {None, "bad-init", "init", *range(1, 19)}, ids  # none to a notification
    assert len([m for m in server.messages if "method" not in m and m.get("id") is None]) == 4
    stderr = server.stderr.decode(errors="replace")
    assert "Traceback" not in stderr and "AttributeError" not in stderr, stderr


async def test_a_workspace_holding_the_home_folder_is_not_allowed(tmp_path: Path) -> None:
    """PROTOCOL.md §7: a session `cwd` holding the home folder is -31004 (not allowed), also
    when it is the workspace root a `kiln/session/new` without `cwd` defaults to; nothing is
    stored. It was -32602 (invalid params) for the default cwd."""
    script = tmp_path / "script.json"
    script.write_text('["never"]')
    state = tmp_path / "kiln-state"  # KILN_HOME inside the workspace
    state.mkdir()
    env = server_env(state, HOME=str(tmp_path), KILN_PROVIDER="scripted", KILN_SCRIPT=str(script))
    server = await RawServer.start(tmp_path, env)
    try:
        # hover: false (next to another language server) is not advertised either.
        result = await server.initialize(
            tmp_path, initializationOptions={"index": False, "hover": False}
        )
        assert not result["capabilities"].get("hoverProvider"), result["capabilities"]
        for msg_id, params in ((1, {}), (2, {"cwd": str(tmp_path)}), (3, {"cwd": str(state)})):
            reply = await server.request(msg_id, "kiln/session/new", params)
            assert error_code(reply) == -31004, reply
            assert reply["error"]["data"]["hint"]
        assert (await server.request(4, "kiln/session/list"))["result"] == {"sessions": []}
    finally:
        await server.close()


async def test_a_relative_session_cwd_is_taken_from_the_workspace_root(
    tmp_path: Path, workspace: Path, kiln_home: Path, scripted_env: Any
) -> None:
    """An editor starts the server from anywhere: `cwd: "sub"` means the root's `sub` folder,
    not one under the server process's working directory."""
    (workspace / "sub").mkdir()
    server = await RawServer.start(tmp_path, scripted_env(["never"]))  # process cwd: not root
    try:
        # Refused initializationOptions: the server starts on defaults and kiln/hello says why.
        await server.initialize(workspace, initializationOptions={"index": False, "maxSteps": 0})
        hello = (await server.request(0, "kiln/hello"))["result"]
        assert "maxSteps" in hello["configError"] and hello["config"]["mode"] == "ask"
        reply = await server.request(1, "kiln/session/new", {"cwd": "sub"})
        assert reply["result"]["cwd"] == str(workspace / "sub"), reply
        assert error_code(await server.request(2, "kiln/session/new", {"cwd": "../.."})) == -31004
        # a URL is not a folder: one line saying so (it was "cwd <root>/http:/x is outside …")
        for n, url in enumerate(("http://x/", "vscode-remote://ssh/x"), start=3):
            reply = await server.request(n, "kiln/session/new", {"cwd": url})
            assert error_code(reply) == -32602, reply
            message = reply["error"]["message"]
            assert message.startswith(f"cwd {url} is a URL, not a folder") and "\n" not in message
    finally:
        await server.close()


async def test_two_loads_of_one_stored_session_make_one_live_session(
    workspace: Path, scripted_env: Any
) -> None:
    """§4 `kiln/session/load`: a session already live is returned as is. Two loads of a stored
    session arriving together (a panel and a picker) open it once: the second answers the
    session the first made, not a second copy that replaces it with another mode."""
    server = await RawServer.start(workspace, scripted_env(["one", "two"]))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        await server.request("first", "kiln/session/prompt", {"sessionId": sid, "prompt": "hi"})
        await server.request("close", "kiln/session/close", {"sessionId": sid})
        loads = [{"jsonrpc": "2.0", "id": f"load-{mode}", "method": "kiln/session/load",
                  "params": {"sessionId": sid, "mode": mode, "replay": False}}
                 for mode in ("yolo", "ci")]  # fmt: skip
        assert server.proc.stdin is not None
        server.proc.stdin.write(b"".join(frame(json.dumps(m).encode()) for m in loads))
        answers = [(await server.response(m["id"]))["result"] for m in loads]
        listed = (await server.request("list", "kiln/session/list"))["result"]["sessions"]
        assert [a["mode"] for a in answers] == [listed[0]["mode"]] * 2 == ["yolo", "yolo"]
        second = await server.request(
            "again", "kiln/session/prompt", {"sessionId": sid, "prompt": "x"}
        )
        assert second["result"]["stopReason"] == "end_turn"
    finally:
        await server.close()


def documented_index_status_keys() -> list[str]:
    """The keys of the `kiln/index/status` answer that PROTOCOL.md §6 lists without a `?`."""
    text = (Path(__file__).resolve().parents[2] / "lsp_server" / "PROTOCOL.md").read_text()
    entry = text[text.index("- `kiln/index/status`") :]
    start = entry.index("→ `{") + 4
    answer = entry[start : entry.index("}`", start)]
    answer = re.sub(r"\{[^{}]*\}", "", answer)  # nested objects' keys are not the answer's
    answer = re.sub(r':\s*"\w+"(\s*\|\s*"[\w-]+")*', ":", answer)  # the values of `state`
    return [k for k, optional in re.findall(r'"(\w+)"(\??)', answer) if not optional]


async def test_index_status_has_every_documented_key_without_an_index(
    workspace: Path, kiln_home: Path
) -> None:
    """§6: a panel reads `files`, `blocks`, … from `kiln/index/status` in every state, also when
    the index is `unavailable` (turned off here): then they are zero or null, not missing."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        keys = documented_index_status_keys()
        idle = (await server.request("status", "kiln/index/status"))["result"]  # may be idle yet
        assert [k for k in keys if k not in idle] == [], idle
        status = await server.index_until(lambda s: s["state"] == "unavailable")
        assert status["error"]
        assert "files" in keys and "history_head" in keys, keys
        assert [k for k in keys if k not in status] == [], status
        assert (status["files"], status["blocks"], status["last_indexed"]) == (0, 0, None)
    finally:
        await server.close()


async def test_the_prompt_answer_counts_the_usage_of_its_own_turn(
    workspace: Path, scripted_env: Any
) -> None:
    """§4: `kiln/session/prompt` answers for the turn it ran: its `usage` is that turn's tokens,
    not the session's running total, which `kiln/context/show` reports."""
    server = await RawServer.start(workspace, scripted_env(["same reply", "same reply"]))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        turns = [
            (await server.request(f"turn-{n}", "kiln/session/prompt",
                                  {"sessionId": sid, "prompt": "hi"}))["result"]["usage"]
            for n in range(2)
        ]  # fmt: skip
        total = (await server.request("show", "kiln/context/show", {"sessionId": sid}))["result"]
        assert turns[0]["output_tokens"] == turns[1]["output_tokens"] > 0  # the same reply twice
        for key in ("input_tokens", "output_tokens"):
            assert turns[0][key] + turns[1][key] == total["usage"][key], (turns, total["usage"])
    finally:
        await server.close()


async def test_a_request_with_a_null_id_is_refused_not_served(
    workspace: Path, kiln_home: Path
) -> None:
    """LSP types a request's id `integer | string`; JSON-RPC 2.0 keeps `null` for answers to a
    message whose id could not be read. `{"id": null, "method": "initialize"}` was served and
    answered under `id: null`, so the client could not tell its answer from an error about some
    unreadable message. It is now -32600 under `id: null`, and nothing runs: the handshake and
    the shutdown that follow with real ids still work."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        root = workspace.as_uri()
        server.send({"jsonrpc": "2.0", "id": None, "method": "initialize",
                     "params": {"capabilities": {}, "rootUri": root}})  # fmt: skip
        await server.wait_for(lambda m: "method" not in m and m.get("id") is None)
        result = await server.initialize(workspace)  # the null one did not count as initialize
        assert result["capabilities"]["experimental"]["kiln"]["protocolVersion"] == 1
        server.send({"jsonrpc": "2.0", "id": None, "method": "kiln/session/new", "params": {}})
        server.send({"jsonrpc": "2.0", "id": None, "method": "initialized", "params": {}})
        server.send({"jsonrpc": "2.0", "id": None, "method": "shutdown"})
        assert "result" in await server.request(1, "kiln/session/list")  # still serving
        nulls = [m for m in server.messages if "method" not in m and m.get("id") is None]
        assert [m["error"]["code"] for m in nulls] == [-32600] * 4, nulls
        assert "result" in await server.request(2, "shutdown")  # the null shutdown did nothing
        assert not (kiln_home / "sessions").exists() or not any((kiln_home / "sessions").iterdir())
    finally:
        await server.close()


async def test_a_second_request_under_an_id_in_flight_is_refused_and_not_run(
    workspace: Path, scripted_env: Any, tmp_path: Path
) -> None:
    """JSON-RPC wants a request's id unique among the client's requests not answered yet.
    `kiln lsp` served both (a second `kiln/session/new` under the id of a running prompt made a
    session, and two answers came under one id); the second is now -32600 naming the id, as
    `kiln acp` answers it, and is not run. The first goes on; once answered, the id is free."""
    steps = [{"wait_for": str(tmp_path / "never"), "text": "late"}]
    server = await RawServer.start(workspace, scripted_env(steps))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        server.request_nowait(7, "kiln/session/prompt", {"sessionId": sid, "prompt": "hi"})
        for attempt in range(600):  # the turn runs once the session lists as busy
            listed = await server.request(f"list-{attempt}", "kiln/session/list")
            if listed["result"]["sessions"][0]["busy"]:
                break
            await asyncio.sleep(0.1)
        refused = await server.request(7, "kiln/session/new", {})
        assert refused["error"] == {
            "code": -32600,
            "message": "request id 7 is already in use by a request not answered yet",
            "data": {"hint": "give each request an id of its own until it is answered"},
        }, refused
        server.notify("kiln/session/cancel", {"sessionId": sid})
        first = await server.wait_for(lambda m: m.get("id") == 7 and m is not refused)
        assert first["result"]["stopReason"] == "cancelled", first
        listed = await server.request("after", "kiln/session/list")
        assert [s["sessionId"] for s in listed["result"]["sessions"]] == [sid]  # no new one
        assert [m for m in server.messages if m.get("id") == 7] == [refused, first]
        server.messages.clear()
        assert "result" in await server.request(7, "kiln/session/list")  # free again
    finally:
        await server.close()


async def test_an_error_quoting_a_huge_value_is_cut_to_one_short_line(
    workspace: Path, kiln_home: Path
) -> None:
    """An error naming what the client sent (a session id, a method, a skill) echoed it whole:
    a 100,000-character session id came back as a 100 kB error. The message and its hint keep
    their head and tail around `…`, at most 500 characters, as in `kiln acp`."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        huge = "a" * 100_000
        for n, (method, params) in enumerate(
            [
                ("kiln/session/load", {"sessionId": huge}),
                ("kiln/session/prompt", {"sessionId": huge, "prompt": "hi"}),
                ("kiln/skills/use", {"name": huge}),
                ("kiln/edit/resolve", {"proposalId": huge, "decision": "reject"}),
                (f"kiln/{huge}", {}),
            ]
        ):
            error = (await server.request(n, method, params))["error"]
            assert len(error["message"]) <= 500 and "…" in error["message"], (method, error)
            assert error["message"].endswith("a" * 20) or "aaaa…" in error["message"], error
            assert len(json.dumps(error)) < 1200, (method, len(json.dumps(error)))
        assert await server.shutdown_and_exit() == 0
    finally:
        await server.close()
