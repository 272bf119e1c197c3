"""`kiln lsp` against frames a hostile or broken client sends: each costs it one answer and the
server goes on serving (lsp_server/PROTOCOL.md §1, lsp_server/json_text.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer, error_code

pytestmark = pytest.mark.e2e


async def test_a_content_length_of_thousands_of_digits_is_refused_and_serving_goes_on(
    workspace: Path, kiln_home: Path
) -> None:
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        assert server.proc.stdin is not None
        # Python refuses to read an int of over 4,300 digits: the read loop died on it, and the
        # server never answered again
        server.proc.stdin.write(b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n{}")
        refused = await server.wait_for(lambda m: m.get("id") is None and "error" in m)
        assert refused["error"]["code"] == -32600
        assert "Content-Length" in refused["error"]["message"]
        result = await server.initialize(workspace)
        assert result["serverInfo"]["name"] == "kiln"
        assert (await server.request(1, "kiln/hello", {}))["result"]["protocolVersion"] == 1
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr


async def test_a_batch_is_answered_under_each_request_id(workspace: Path, kiln_home: Path) -> None:
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace)
        server.send_bytes(
            b'[{"jsonrpc": "2.0", "id": 7, "method": "kiln/hello"},'
            b' {"jsonrpc": "2.0", "id": "eight", "method": "kiln/index/status"},'
            b' {"jsonrpc": "2.0", "method": "initialized"}]'
        )
        # one answer per request: a client waiting on id 7 hears why (it waited for ever)
        assert error_code(await server.response(7)) == -32600
        eight = await server.response("eight")
        assert eight["error"]["code"] == -32600 and "batch" in eight["error"]["message"]
        assert not [m for m in server.messages if m.get("id") is None and "error" in m]
        assert "result" in await server.request(9, "kiln/hello", {})
    finally:
        await server.close()


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity", b"1e400"])
async def test_numbers_json_has_not_are_a_parse_error(
    workspace: Path, kiln_home: Path, number: bytes
) -> None:
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace)
        server.send_bytes(
            b'{"jsonrpc": "2.0", "id": 3, "method": "kiln/complete/mentions",'
            b' "params": {"query": "greet", "limit": ' + number + b"}}"
        )
        refused = await server.wait_for(lambda m: m.get("id") is None and "error" in m)
        assert refused["error"]["code"] == -32700
        assert not [m for m in server.messages if m.get("id") == 3]
    finally:
        await server.close()


async def test_lone_surrogates_are_read_as_replacement_characters(
    workspace: Path, kiln_home: Path
) -> None:
    """A lone UTF-16 surrogate escape parses into a string no UTF-8 encoder takes: the index
    query and the buffer's blocks failed as -32603 deep inside the handlers."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace)
        await server.index_until(lambda s: s["state"] == "ready")
        uri = (workspace / "app.py").as_uri().encode()
        server.send_bytes(
            b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument":'
            b' {"uri": "' + uri + b'", "languageId": "python", "version": 1,'
            b' "text": "def greet_\\ud800(name):\\n    return \\"\\udc00\\"\\n"}}}'
        )
        server.send_bytes(
            b'{"jsonrpc": "2.0", "id": 4, "method": "kiln/complete/mentions",'
            b' "params": {"query": "\\udc00greet"}}'
        )
        assert "result" in await server.response(4)
        found = await server.request(5, "kiln/complete/mentions", {"query": "greet"})
        signatures = [item.get("signature", "") for item in found["result"]["items"]]
        assert "def greet_\ufffd(name)" in signatures  # the unsaved buffer, mended
    finally:
        await server.close()
    assert b"surrogates not allowed" not in server.stderr


async def test_a_process_id_past_32_bits_is_not_watched(workspace: Path, kiln_home: Path) -> None:
    """os.kill raised OverflowError in the parent watch, a traceback on stderr every run."""
    env = server_env(kiln_home, KILN_PARENT_POLL_SECONDS="0.05")
    server = await RawServer.start(workspace, env)
    try:
        await server.initialize(workspace, processId=2**31)
        hello = await server.request(1, "kiln/hello", {})
        assert hello["result"]["protocolVersion"] == 1
        assert await server.shutdown_and_exit() == 0
    finally:
        await server.close()
    assert b"not a process id" in server.stderr
    assert b"Traceback" not in server.stderr
