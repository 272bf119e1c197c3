"""Standard LSP params of the wrong JSON type are refused, not coerced.

lsprotocol's converter called ``int(value)`` / ``str(value)`` on whatever arrived: a position's
line sent as ``"0"``, ``0.5`` or ``true`` became 0, 0 or 1, a URI sent as a number became the
string ``"5"``, and `kiln lsp` served a place the client never named (and a didChange whose text
was a number replaced the buffer with its digits). Each is now "invalid params" naming the field
as the client spelt it, and a malformed notification is dropped with a log line saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer

pytestmark = pytest.mark.e2e


async def test_wrong_primitive_types_are_invalid_params_naming_the_field(
    workspace: Path, kiln_home: Path
) -> None:
    (workspace / "app.py").write_text("def foo():\n    return 1\n")
    uri = (workspace / "app.py").as_uri()
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        server.notify("initialized", {})
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": "def foo():\n"}
        server.notify("textDocument/didOpen", {"textDocument": doc})

        def hover(uri: object, line: object) -> dict[str, object]:
            position = {"line": line, "character": 4}
            return {"textDocument": {"uri": uri}, "position": position}

        refused = {
            10: (hover(uri, "0"), "expected an integer, got str '0' at $.params.position.line"),
            11: (
                hover(uri, 0.5),
                "expected an integer, got float 0.5 at $.params.position.line",
            ),
            12: (
                hover(uri, True),
                "expected an integer, got bool True at $.params.position.line",
            ),
            13: (hover(5, 0), "expected a string, got int 5 at $.params.textDocument.uri"),
        }
        for msg_id, (params, why) in refused.items():
            reply = await server.request(msg_id, "textDocument/hover", params)
            assert reply.get("error", {}).get("code") == -32602, reply
            assert reply["error"]["message"] == f"Invalid params for textDocument/hover: {why}"
        # an integral float is an integer some JSON encoders write that way: served
        served = await server.request(20, "textDocument/hover", hover(uri, 0.0))
        assert "error" not in served, served

        change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": 5}]}
        server.notify("textDocument/didChange", change)
        logged = await server.wait_for(
            lambda m: (
                m.get("method") == "window/logMessage" and "didChange" in m["params"]["message"]
            )
        )
        assert logged["params"]["message"] == (
            "kiln: dropped a malformed textDocument/didChange notification: "
            "expected a string, got int 5 at $.params.contentChanges[0].text"
        )
        assert (await server.request(30, "kiln/hello"))["result"]["protocolVersion"] == 1
        assert await server.shutdown_and_exit() == 0
    finally:
        await server.close()
    assert "Traceback" not in server.stderr.decode(errors="replace")


async def test_a_value_that_is_no_object_where_lsp_wants_one_is_invalid_params(
    workspace: Path, kiln_home: Path
) -> None:
    """cattrs read any value it could look keys up in as an object whose fields are all
    optional: `initialize` with `"capabilities": "x"` (or `"general": "utf-8"`) was answered as
    if no capabilities were sent. It is -32602 naming the field, like a wrong primitive; the
    client may then send a corrected `initialize`. `[]`, Neovim's empty table, is an empty
    object."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        root = workspace.as_uri()
        for n, (capabilities, where) in enumerate(
            [
                ("x", "$.params.capabilities"),
                ({"general": "utf-8"}, "$.params.capabilities.general"),
            ]
        ):
            reply = await server.request(
                n, "initialize", {"rootUri": root, "capabilities": capabilities}
            )
            assert reply["error"]["code"] == -32602, reply
            assert reply["error"]["message"] == (
                f"Invalid params for initialize: expected an object, got str "
                f"{capabilities if isinstance(capabilities, str) else capabilities['general']!r} at {where}"
            ), reply
        result = await server.initialize(workspace, capabilities={"workspace": []})
        assert result["serverInfo"]["name"] == "kiln"  # the corrected one is the handshake
        assert await server.shutdown_and_exit() == 0
    finally:
        await server.close()
