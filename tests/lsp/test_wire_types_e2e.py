"""Every LSP message `kiln lsp` sends fits lsprotocol's types.

A session drives many features (initialize with every capability Kiln reads, configuration,
watcher registration, progress, buffers, hover, a turn that edits an open file and creates
another, a refused setting, `$/setTrace`, errors, shutdown); all outgoing traffic is recorded and
each message of an LSP method is structured with lsprotocol's converter as the type that method
defines (requests and notifications by their method, answers by the method they answer), then
unstructured again: a field missing, or one lsprotocol does not know, fails the test.
`kiln/*` messages are Kiln's own (PROTOCOL.md) and are only checked to be JSON-RPC 2.0.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from lsprotocol.converters import get_converter

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer

pytestmark = pytest.mark.e2e

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
CAPABILITIES = {
    "general": {"positionEncodings": ["utf-8", "utf-16"]},
    "window": {"workDoneProgress": True, "showMessage": {}},
    "workspace": {
        "applyEdit": True,
        "configuration": True,
        "workspaceFolders": True,
        "didChangeWatchedFiles": {"dynamicRegistration": True},
        "workspaceEdit": {
            "documentChanges": True,
            "resourceOperations": ["create"],
            "changeAnnotationSupport": {"groupsOnLabel": True},
        },
    },
    "textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]}},
}


def answer(message: dict[str, Any]) -> Any:
    """What an editor answers to each request the server sends."""
    method = message["method"]
    if method == "workspace/configuration":
        return [{"permissionTimeout": 30}]
    if method == "workspace/applyEdit":
        return {"applied": True}
    if method == "kiln/session/requestPermission":
        return ALLOW
    return None  # window/workDoneProgress/create, client/registerCapability


async def answer_requests(server: RawServer) -> None:
    seen = 0
    while True:
        while seen < len(server.messages):
            message = server.messages[seen]
            seen += 1
            if "method" in message and "id" in message:
                result = answer(message)
                server.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        server.arrived.clear()
        await server.arrived.wait()


def misfits(sent: dict[Any, str], received: list[dict[str, Any]]) -> list[str]:
    """Each received message that does not fit its lsprotocol type, with why."""
    converter = get_converter()
    problems = []
    for message in received:
        if message.get("jsonrpc") != "2.0":
            problems.append(f"not JSON-RPC 2.0: {message}")
            continue
        method = message.get("method") or sent.get(message.get("id"), "")
        entry = types.METHOD_TO_TYPES.get(method)
        if entry is None:  # kiln/*: Kiln's own shapes
            continue
        if "method" in message:
            kind = entry[0]
        elif "error" in message:
            kind = types.ResponseErrorMessage
        else:
            kind = entry[1]
        try:
            made = converter.structure(message, kind)
            back = json.loads(json.dumps(converter.unstructure(made, unstructure_as=kind)))
        except Exception as exc:  # noqa: BLE001 - what does not fit is the finding
            problems.append(f"{method}: {exc!r} in {json.dumps(message)[:500]}")
            continue
        if back != message:
            problems.append(f"{method}: sent {message}, lsprotocol reads {back}")
    return problems


async def test_every_lsp_message_the_server_sends_fits_lsprotocol(
    workspace: Path, kiln_home: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    edit = {"path": "app.py", "old_text": "hello", "new_text": "hé 漢字 e\u0301 👍"}
    script.write_text(
        json.dumps(
            [
                {"match": "go", "text": "", "tool_calls": [{"name": "edit_file", "input": edit}]},
                {
                    "match": "edited",
                    "text": "",
                    "tool_calls": [
                        {"name": "write_file", "input": {"path": "new.py", "content": "x = 1\n"}}
                    ],
                },
                {"text": "done"},
            ]
        ),
        encoding="utf-8",
    )
    env = server_env(kiln_home, KILN_PROVIDER="scripted", KILN_SCRIPT=str(script))
    server = await RawServer.start(workspace, env)
    responder = asyncio.ensure_future(answer_requests(server))
    ids = itertools.count()
    sent: dict[Any, str] = {}

    async def request(method: str, params: Any) -> dict[str, Any]:
        msg_id = next(ids)
        sent[msg_id] = method
        return await server.request(msg_id, method, params)

    try:
        sent["init"] = "initialize"
        await server.initialize(
            workspace,
            capabilities=CAPABILITIES,
            workspaceFolders=[{"uri": workspace.as_uri(), "name": "ws"}],
            initializationOptions={"confirmEdits": True},
        )
        await server.index_until(lambda s: s["state"] == "ready")
        uri = (workspace / "app.py").as_uri()
        text = (workspace / "app.py").read_text(encoding="utf-8")
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        server.notify("textDocument/didOpen", {"textDocument": doc})
        server.notify("$/setTrace", {"value": "verbose"})
        assert "result" in await request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 5}},
        )
        assert "error" in await request("textDocument/hover", {"textDocument": {"uri": uri}})
        assert "error" in await request("textDocument/definition", {})
        server.notify(
            "workspace/didChangeConfiguration", {"settings": {"kiln": {"permissionTimeout": 0}}}
        )
        session = (await request("kiln/session/new", {"mode": "yolo"}))["result"]
        turn = await request(
            "kiln/session/prompt", {"sessionId": session["sessionId"], "prompt": "go"}
        )
        assert turn["result"]["filesModified"] == ["app.py", "new.py"], turn
        assert (await request("shutdown", None))["result"] is None
        assert "error" in await request("kiln/hello", {})
        server.notify("exit")
        assert await server.exit_code() == 0
    finally:
        responder.cancel()
        await server.close()
    methods = {m.get("method") for m in server.messages}
    assert {"workspace/applyEdit", "window/showMessage", "window/logMessage"} <= methods, methods
    assert not misfits(sent, server.messages), "\n".join(misfits(sent, server.messages))


def test_the_check_finds_a_message_that_does_not_fit() -> None:
    """The check itself: a missing field, an unknown one, a misnamed one each fail it."""
    hover = {"contents": {"kind": "markdown", "value": "x"}}
    bad = [
        {"jsonrpc": "2.0", "id": 1, "result": {"contents": {"kind": "markdown"}}},
        {"jsonrpc": "2.0", "id": 1, "result": {**hover, "range": {"start": {"line": 0}}}},
        {"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 3, "text": "x"}},
        {
            "jsonrpc": "2.0",
            "method": "window/showMessage",
            "params": {"type": 3, "message": "x", "kind": 1},
        },
    ]
    good = [{"jsonrpc": "2.0", "id": 1, "result": hover}]
    assert len(misfits({1: "textDocument/hover"}, bad)) == len(bad)
    assert misfits({1: "textDocument/hover"}, good) == []
