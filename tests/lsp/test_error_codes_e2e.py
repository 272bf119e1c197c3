"""lsp_server/PROTOCOL.md §7 says which error each code stands for; these hold it to what
`kiln lsp` sends. -31001 read "not live and not stored", yet a prompt to a session stored by an
earlier server process (not loaded in this one) is -31001 too."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lsp_server import core
from lsp_server.lsp import frames, rpc, transport
from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer, error_code

pytestmark = pytest.mark.e2e

PROTOCOL = Path(__file__).resolve().parents[2] / "lsp_server" / "PROTOCOL.md"


def documented_codes() -> dict[int, str]:
    text = PROTOCOL.read_text(encoding="utf-8")
    table = text[text.index("## 7. Errors") : text.index("## 8.")]
    return {int(c): row for c, row in re.findall(r"^\| `(-\d+)` \| (.*) \|$", table, re.M)}


def test_every_documented_code_is_one_the_server_has() -> None:
    sent = {
        frames.PARSE_ERROR, frames.INVALID_REQUEST, transport.METHOD_NOT_FOUND,
        transport.INVALID_PARAMS, transport.SERVER_NOT_INITIALIZED, rpc.REQUEST_FAILED,
        core.SESSION_NOT_FOUND, core.TURN_IN_PROGRESS, core.STALE_DOCUMENT, core.NOT_ALLOWED,
        core.NOT_AVAILABLE,
        -32603, -32800,  # pygls's internal error and request cancelled
    }  # fmt: skip
    assert set(documented_codes()) == sent


async def test_session_not_found_is_what_the_table_says(
    workspace: Path, scripted_env: Callable[[list[Any]], dict[str, str]]
) -> None:
    env = scripted_env(["Hello."])
    first = await RawServer.start(workspace, env)
    try:
        await first.initialize(workspace)
        stored = (await first.request(1, "kiln/session/new", {}))["result"]["sessionId"]
        said = await first.request(2, "kiln/session/prompt", {"sessionId": stored, "prompt": "hi"})
        assert said["result"]["stopReason"] == "end_turn"
        assert await first.shutdown_and_exit() == 0
    finally:
        await first.close()
    assert "load it first" in documented_codes()[-31001]
    server = await RawServer.start(workspace, env)
    try:
        await server.initialize(workspace)
        for msg_id, (method, params) in enumerate(
            [
                ("kiln/session/load", {"sessionId": "20200101-000000-deadbeef"}),
                ("kiln/session/load", {"sessionId": "../x"}),
                ("kiln/session/prompt", {"sessionId": stored, "prompt": "again"}),
                ("kiln/session/setMode", {"sessionId": stored, "mode": "ask"}),
                ("kiln/session/compact", {"sessionId": stored}),
                ("kiln/context/show", {"sessionId": stored}),
            ]
        ):
            reply = await server.request(msg_id, method, params)
            assert error_code(reply) == -31001, (method, reply)
        closed = await server.request("close", "kiln/session/close", {"sessionId": stored})
        assert closed["result"] == {"closed": False}
        listed = await server.request("edits", "kiln/edit/list", {"sessionId": stored})
        assert listed["result"] == {"edits": []}
        loaded = await server.request("load", "kiln/session/load", {"sessionId": stored})
        assert loaded["result"]["sessionId"] == stored  # once loaded, it is served
        shown = await server.request("show", "kiln/context/show", {"sessionId": stored})
        assert shown["result"]["turns"] == 1
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr


def test_an_internal_error_is_one_line_without_a_traceback() -> None:
    """pygls answers a handler's unexpected exception with the Python traceback in `data`
    (file paths and source lines of the server, for any client to read); every answer passes
    through `rpc.plain_error`, which keeps one line and drops the traceback (pygls has
    logged it on stderr). No request reaches an internal error from outside any more (the
    last one, below, is passed over now), so pygls's own error object is built here."""
    import sys

    from pygls.exceptions import JsonRpcInternalError

    try:
        raise ValueError("Invalid IPv6 URL\n  at line 2")
    except ValueError:
        error = JsonRpcInternalError.of(sys.exc_info()).to_response_error()
    assert "traceback" in json.dumps(error.data)  # what pygls would have sent
    plain = rpc.plain_error(error)
    assert plain.code == -32603 and plain.message == "ValueError: Invalid IPv6 URL at line 2"
    assert plain.data is None or "traceback" not in plain.data
    assert "File " not in json.dumps(plain.data) and ".py" not in json.dumps(plain.data)


async def test_a_root_no_uri_parser_reads_is_passed_over(workspace: Path, kiln_home: Path) -> None:
    """A rootUri or workspace folder urllib cannot split (`file://[x`: "Invalid IPv6 URL") failed
    inside pygls's own initialize as an internal error, and every initialize after it was
    answered "already sent": the client could never start. It is passed over, as PROTOCOL.md
    §1 says of a name that names no folder, and the next named folder is the root."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        params = {
            "processId": None,
            "capabilities": {},
            "rootUri": "file://[x/y",
            "workspaceFolders": [
                {"uri": "http://[::1", "name": "bad"},
                {"uri": workspace.as_uri(), "name": "ws"},
            ],
        }
        reply = await server.request("init", "initialize", params)
        assert "result" in reply, reply
        server.notify("initialized", {})
        status = await server.request("s", "kiln/index/status", {})
        assert status["result"]["root"] == str(workspace.resolve()), status
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr
    assert b"passed over rootUri file://[x/y" in server.stderr
