"""`kiln acp` against JSON-RPC 2.0's envelope rules, byte for byte: ids, the version member,
methods, omitted params. Framing errors (bad JSON, size, depth) are in test_acp_lifecycle.py."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from asyncio.subprocess import PIPE
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import KILN_ACP
from tests.acp.test_acp_lifecycle import frame, run_raw

pytestmark = pytest.mark.e2e


def test_messages_that_are_not_json_rpc_2_get_32600_and_omitted_params_are_empty(
    kiln_home: Path,
) -> None:
    """The SDK answered `id: true` or `id: {}` with a result under that id, served messages
    without `"jsonrpc": "2.0"`, called a numeric method "not found", and refused a
    `session/list` without params (JSON-RPC lets params be omitted; all its fields are
    optional); a notification it could not read logged a traceback."""
    raw = [
        frame(1, "initialize", {"protocolVersion": 1}),
        '{"jsonrpc": "2.0", "id": true, "method": "session/list", "params": {}}',
        '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "session/list", "params": {}}',
        '{"jsonrpc": "2.0", "id": [2], "method": "session/list", "params": {}}',
        '{"jsonrpc": "2.0", "id": 2.5, "method": "session/list", "params": {}}',
        '{"id": 3, "method": "session/list", "params": {}}',
        '{"jsonrpc": "1.0", "id": 4, "method": "session/list", "params": {}}',
        '{"jsonrpc": "2.0", "id": 5, "method": 5, "params": {}}',
        '{"jsonrpc": "2.0", "id": 6}',  # an answer to no request of ours: dropped
        '{"jsonrpc": "2.0"}',  # neither a request nor an answer
        '{"jsonrpc": "2.0", "id": true, "result": {}}',  # would match request 1: dropped
        '{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "x"}}',  # no reply
        '{"jsonrpc": "2.0", "id": 7, "method": "session/list"}',
        '{"jsonrpc": "2.0", "id": 8, "method": "session/list", "params": null}',
        '{"jsonrpc": "2.0", "id": 9, "method": "session/new"}',
        '{"jsonrpc": "2.0", "method": "session/cancel"}',
        '{"jsonrpc": "2.0", "method": "session/cancel", "params": [1]}',
        '{"jsonrpc": "2.0", "id": "a string id", "method": "session/list", "params": {}}',
    ]
    done = run_raw(raw, kiln_home)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    nulls = [r["error"]["code"] for r in replies if r["id"] is None]
    assert nulls == [-32600] * 5, replies  # the four bad ids and `{"jsonrpc": "2.0"}`
    by_id = {r["id"]: r for r in replies if r["id"] is not None}
    assert sorted(by_id, key=str) == [1, 3, 4, 5, 7, 8, 9, "a string id"], replies
    for msg_id in (3, 4, 5):
        assert by_id[msg_id]["error"]["code"] == -32600, by_id[msg_id]
    assert by_id[7]["result"] == by_id[8]["result"] == {"sessions": []}
    assert by_id["a string id"]["result"] == {"sessions": []}
    assert by_id[9]["error"]["code"] == -32602  # session/new needs its cwd
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("malformed session/cancel notification") == 2, done.stderr


def test_a_request_with_a_null_id_is_served_under_that_id(kiln_home: Path) -> None:
    """ACP's `RequestId` is an integer, a string or null (JSON-RPC 2.0 discourages null but
    allows it, and the answer carries the same value): a null-id request is a request, not a
    notification, and is answered under `id: null` (`kiln lsp` refuses it: LSP's id is
    `integer | string`). lsp_server/PROTOCOL.md and docs/acp.md say which does what. Null is
    an id like another: a second request under null sent while the first is not answered yet
    is refused (-32600), as a reused id 3 is (`tests/acp/test_acp_request_ids.py`)."""
    raw = [
        frame(1, "initialize", {"protocolVersion": 1}),
        '{"jsonrpc": "2.0", "id": null, "method": "session/list", "params": {}}',
        '{"jsonrpc": "2.0", "id": null, "method": "session/list", "params": {}}',
        '{"jsonrpc": "2.0", "id": 2, "method": "session/cancel", "params": {"sessionId": "x"}}',
    ]
    done = run_raw(raw, kiln_home)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(str(r["id"]) for r in replies) == ["1", "2", "None", "None"], replies
    nulls = [r for r in replies if r["id"] is None]
    assert {"sessions": []} in [r.get("result") for r in nulls], replies  # served
    assert -32600 in [r.get("error", {}).get("code") for r in nulls], replies  # id in use
    by_id = {r["id"]: r for r in replies}
    assert by_id[2]["error"]["code"] == -32601  # a notification's method, sent with an id


def test_a_refused_initialize_is_not_the_handshake(kiln_home: Path) -> None:
    """An `initialize` answered with an error (bad `_meta.kiln` options) still counted: the
    corrected retry was refused as "initialize was already sent", while requests that need
    the handshake were served. Only an initialize answered with a result counts."""
    bad = {"protocolVersion": 1, "_meta": {"kiln": {"mode": "nope"}}}
    done = run_raw(
        [
            frame(1, "initialize", bad),
            frame(2, "session/list", {}),
            frame(3, "initialize", {"protocolVersion": 1}),
            frame(4, "session/list", {}),
            frame(5, "initialize", {"protocolVersion": 1}),
        ],
        kiln_home,
    )
    by_id = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert by_id[1]["error"]["code"] == -32602 and "nope" in by_id[1]["error"]["message"]
    assert by_id[2]["error"]["code"] == -32600  # not initialized yet
    assert by_id[3]["result"]["protocolVersion"] == 1
    assert by_id[4]["result"] == {"sessions": []}
    assert by_id[5]["error"]["code"] == -32600  # now it was sent
    assert "Traceback" not in done.stderr


def test_after_a_refused_initialize_every_other_request_is_still_32600(kiln_home: Path) -> None:
    """docs/acp.md: before `initialize` (one answered with an error does not count) a request
    other than `initialize` is -32600, whatever its method or params. After a refused one, an
    unknown method was -32601 and a malformed `session/new` -32602, as if the handshake had
    happened."""
    env = {"KILN_HOME": str(kiln_home), "PATH": "/usr/bin:/bin", "KILN_PROVIDER": "scripted",
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}  # fmt: skip
    proc = subprocess.Popen(KILN_ACP, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None

    def ask(line: str) -> dict[str, Any]:
        proc.stdin.write(line + "\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        return json.loads(proc.stdout.readline())  # type: ignore[union-attr]

    bad = {"protocolVersion": 1, "_meta": {"kiln": {"maxSteps": 0}}}
    try:
        assert ask(frame(1, "initialize", bad))["error"]["code"] == -32602
        for n, method, params in ((2, "no/such", {}), (3, "session/new", {})):
            answer = ask(frame(n, method, params))
            assert answer["error"]["code"] == -32600, answer
        assert ask(frame(4, "initialize", {"protocolVersion": 1}))["result"]["protocolVersion"] == 1
        assert ask(frame(5, "no/such", {}))["error"]["code"] == -32601  # now it is unknown
    finally:
        proc.stdin.close()
        assert proc.wait(60) == 0


async def test_an_answer_with_neither_result_nor_error_fails_the_waiting_request(
    kiln_home: Path, tmp_path: Path, workspace: Path
) -> None:
    """`{"jsonrpc": "2.0", "id": <the permission request's id>}` is a malformed answer, not a
    request: it must reach the waiting permission request (which then fails, one line) and get
    no reply; answered as an invalid request instead, the turn waited for the timeout."""
    script = tmp_path / "script.json"
    run = {"text": "", "tool_calls": [{"name": "run_command", "input": {"command": "echo hi"}}]}
    script.write_text(json.dumps([run, "refused"]), encoding="utf-8")
    env = {"KILN_HOME": str(kiln_home), "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "PATH": os.environ["PATH"]}  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *KILN_ACP, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    seen: list[dict[str, Any]] = []

    async def until(predicate: Any) -> dict[str, Any]:
        while not (hit := next((m for m in seen if predicate(m)), None)):
            line = await asyncio.wait_for(proc.stdout.readline(), 60)  # type: ignore[union-attr]
            assert line, seen
            seen.append(json.loads(line))
        return hit

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())  # type: ignore[union-attr]

    try:
        send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        send(
            {"id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}}
        )
        sid = (await until(lambda m: m.get("id") == 2))["result"]["sessionId"]
        prompt = [{"type": "text", "text": "run"}]
        send({"id": 3, "method": "session/prompt", "params": {"sessionId": sid, "prompt": prompt}})
        asked = await until(lambda m: m.get("method") == "session/request_permission")
        send({"id": asked["id"]})
        assert (await until(lambda m: m.get("id") == 3))["result"]["stopReason"] == "end_turn"
    finally:
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 60)
    assert not [m for m in seen if "error" in m], seen  # the bare answer got no reply
    thoughts = [
        m["params"]["update"]["content"]["text"]
        for m in seen
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_thought_chunk"
    ]
    assert any("the permission request failed: the client's answer is not" in t for t in thoughts)


def test_a_batch_is_answered_with_one_error_per_request_in_an_array(kiln_home: Path) -> None:
    """ACP v1 sends one message per line; a JSON-RPC batch got one error with `id: null`, so
    the client's requests in it waited for answers that never came. Each request now gets its
    own -32600 under its id, in one array as JSON-RPC answers a batch; notifications none."""
    batch = [
        {"jsonrpc": "2.0", "id": 10, "method": "session/list", "params": {}},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x"}},
        {"jsonrpc": "2.0", "id": "eleven", "method": "session/list"},
        "not a message",
    ]
    only_notifications = [{"jsonrpc": "2.0", "method": "session/cancel", "params": {}}]
    raw = [
        frame(1, "initialize", {"protocolVersion": 1}),
        json.dumps(batch),
        json.dumps(only_notifications),
        "[]",
        frame(2, "session/list", {}),
    ]
    done = run_raw(raw, kiln_home)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    [answered] = [r for r in replies if isinstance(r, list)]
    assert [(r["id"], r["error"]["code"]) for r in answered] == [
        (10, -32600), ("eleven", -32600), (None, -32600)
    ]  # fmt: skip
    assert "one message per line" in answered[0]["error"]["data"]["details"]
    singles = [r for r in replies if isinstance(r, dict)]
    assert sorted(str(r["id"]) for r in singles) == ["1", "2", "None"], replies
    [empty] = [r for r in singles if r["id"] is None]
    assert empty["error"]["code"] == -32600  # `[]`: one error, not an array
    assert next(r for r in singles if r["id"] == 2)["result"] == {"sessions": []}
    assert "Traceback" not in done.stderr, done.stderr


def test_params_the_sdk_cannot_read_get_one_line_naming_the_field(kiln_home: Path) -> None:
    """They were answered "Invalid params" with pydantic's dump in `data`, echoing the whole
    input: a 5 MB prompt without its `sessionId` came back as a 5 MB error."""
    pasted = "x" * 5_000_000
    raw = [
        frame(1, "initialize", {"protocolVersion": 1}),
        frame(2, "session/prompt", {"prompt": [{"type": "text", "text": pasted}]}),
        frame(3, "session/new", {"cwd": 42, "mcpServers": []}),
        frame(4, "session/prompt", {"sessionId": "s", "prompt": [{"type": "video"}]}),
    ]
    done = run_raw(raw, kiln_home)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) < 10_000 for line in lines), [len(line) for line in lines]
    errors = {r["id"]: r["error"] for r in map(json.loads, lines) if "error" in r}
    assert {i: e["code"] for i, e in errors.items()} == {2: -32602, 3: -32602, 4: -32602}
    assert errors[2]["message"] == "invalid params: sessionId: Field required"
    assert errors[3]["message"] == "invalid params: cwd: Input should be a valid string"
    assert errors[4]["message"].startswith("invalid params: prompt.0: Input tag 'video'")
    assert errors[2]["data"]["errors"] == [
        {"loc": ["sessionId"], "msg": "Field required", "type": "missing"}
    ]
    assert "Traceback" not in done.stderr, done.stderr


def test_a_value_of_another_json_type_is_refused_not_coerced(kiln_home: Path) -> None:
    """The SDK's models are lax: `"protocolVersion": "1"` was read as 1, a `size` of `"12"`
    as 12. Each is now -32602 naming the field; the same request with the right types is
    served. (A capability flag that is no boolean still reads as false, as ACP's schema says.)"""
    link = {"type": "resource_link", "uri": "file:///a.py", "name": "a.py", "size": "12"}
    caps = {"fs": {"readTextFile": "yes"}}
    raw = [
        frame(1, "initialize", {"protocolVersion": "1"}),
        frame(
            2, "initialize", {"protocolVersion": 1, "clientCapabilities": caps, "_meta": {"n": "1"}}
        ),
        frame(3, "session/prompt", {"sessionId": "s", "prompt": [link]}),
    ]
    done = run_raw(raw, kiln_home)
    assert done.returncode == 0, done.stderr
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines()) if "id" in r}
    assert replies[1]["error"]["code"] == -32602, replies[1]
    assert replies[1]["error"]["message"] == (
        "invalid params: protocolVersion: Input should be a number, not a string"
    )
    assert replies[2]["result"]["protocolVersion"] == 1, replies[2]
    assert replies[3]["error"]["message"] == (
        "invalid params: prompt.0.size: Input should be a number, not a string"
    )
    assert replies[3]["error"]["data"]["errors"][0]["loc"] == ["prompt", 0, "size"]


def test_authenticate_without_a_provider_says_how_to_configure_one(
    kiln_home: Path, workspace: Path
) -> None:
    """Kiln offers no authentication methods; a client that calls ``authenticate`` anyway (no
    model provider is configured) got "Invalid params" with the reason tucked in ``data``. Its
    one line now says there is nothing to log in to, and both it and the session/new that fails
    say how to configure a provider."""
    raw = [
        frame(1, "initialize", {"protocolVersion": 1}),
        frame(2, "authenticate", {"methodId": "api-key"}),
        frame(3, "session/new", {"cwd": str(workspace), "mcpServers": []}),
    ]
    done = run_raw(raw, kiln_home, provider="anthropic")
    assert done.returncode == 0, done.stderr
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert replies[1]["result"]["authMethods"] == []
    auth, new = replies[2]["error"], replies[3]["error"]
    assert auth["code"] == -32602, auth
    assert auth["message"] == "unknown auth method 'api-key': Kiln offers no authentication methods"
    assert new["code"] == -32603 and "no API key" in new["message"], new
    # docs/acp.md: the providers it names are the ones docs/acp.md's set-up section names
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                     "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "local"):  # fmt: skip
        assert variable in auth["data"]["hint"], auth
    assert "ANTHROPIC_API_KEY" in new["data"]["hint"], new


def test_an_error_quoting_a_huge_value_is_cut_to_one_short_line(
    kiln_home: Path, workspace: Path
) -> None:
    """docs/acp.md: every failure is a one-line message. An unknown session id, a relative `cwd`,
    an auth method or a method name of 1 MB came back whole inside the error (a 1 MB answer per
    request); the message keeps its head and tail, and the code is the one the errors table
    gives."""
    huge = "x" * 1_000_000
    raw = [
        frame(1, "initialize", {"protocolVersion": 1}),
        frame(2, "session/prompt", {"sessionId": huge, "prompt": []}),
        frame(3, "session/load", {"sessionId": huge, "cwd": str(workspace), "mcpServers": []}),
        frame(4, "session/set_mode", {"sessionId": huge, "modeId": "ask"}),
        frame(5, "session/new", {"cwd": huge, "mcpServers": []}),
        frame(6, "authenticate", {"methodId": huge}),
        frame(7, huge, {}),  # no method: -32601, its name in `data` cut as well
    ]  # fmt: skip
    done = run_raw(raw, kiln_home)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    replies = {r["id"]: r for r in map(json.loads, lines)}
    codes = {i: replies[i]["error"]["code"] for i in range(2, 8)}
    assert codes == {2: -32002, 3: -32002, 4: -32002, 5: -32602, 6: -32602, 7: -32601}, codes
    assert "…" in replies[7]["error"]["data"]["method"], replies[7]
    for line in lines:
        assert len(line) < 2_000, line[:300]
    for i in range(2, 7):
        message = replies[i]["error"]["message"]
        assert "…" in message and "\n" not in message, message
    assert replies[5]["error"]["message"].startswith("cwd must be an absolute path, got 'xxx")
