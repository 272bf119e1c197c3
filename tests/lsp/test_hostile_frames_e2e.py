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


@pytest.mark.parametrize("pid", [2**31, -(2**31) - 1, 2**70], ids=["2^31", "-2^31-1", "2^70"])
async def test_a_process_id_past_32_bits_is_not_watched(
    workspace: Path, kiln_home: Path, pid: int
) -> None:
    """os.kill raised OverflowError in the parent watch, a traceback on stderr every run."""
    env = server_env(kiln_home, KILN_PARENT_POLL_SECONDS="0.05")
    server = await RawServer.start(workspace, env)
    try:
        await server.initialize(workspace, processId=pid)
        hello = await server.request(1, "kiln/hello", {})
        assert hello["result"]["protocolVersion"] == 1
        assert await server.shutdown_and_exit() == 0
    finally:
        await server.close()
    assert b"not a process id" in server.stderr
    assert b"Traceback" not in server.stderr


def padded_hello(msg_id: int, pad: int) -> bytes:
    """A kiln/hello of ``pad`` + 6 JSON values (the object, "2.0", the id, the method name,
    params, the array) with ``pad`` zeros in an unknown param."""
    zeros = b",".join([b"0"] * pad)
    return b'{"jsonrpc": "2.0", "id": %d, "method": "kiln/hello", "params": {"pad": [%s]}}' % (
        msg_id,
        zeros,
    )


async def test_a_body_of_more_than_a_million_values_is_refused_unparsed(
    workspace: Path, kiln_home: Path
) -> None:
    """Two bytes a value in the body, some forty once parsed: a 50 MB body held a gigabyte.
    One value past a million is -32600 (`id: null`: nothing of it is read); a million is served,
    and so are strings full of commas and brackets."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace)
        server.send_bytes(padded_hello(1, 1_000_000 - 5))
        server.send_bytes(b"[" + b"{}," * 1_000_000 + b"{}]")  # empty objects count too
        server.send_bytes(padded_hello(2, 1_000_000 - 6))
        served = await server.response(2)
        assert served["result"]["protocolVersion"] == 1
        refused = [m for m in server.messages if m.get("id") is None and "error" in m]
        assert [m["error"]["code"] for m in refused] == [-32600, -32600], refused
        assert all("1,000,000 JSON values" in m["error"]["message"] for m in refused)
        assert not [m for m in server.messages if m.get("id") == 1]
        commas = {"query": ",[{" * 1_500_000, "limit": 1}
        found = await server.request(3, "kiln/complete/mentions", commas)
        assert "result" in found, found
    finally:
        await server.close()


async def test_a_client_leaving_its_answers_unread_is_no_longer_read_from(
    workspace: Path, kiln_home: Path
) -> None:
    """Each `kiln/skills/use` below is answered with a 200 kB skill text: a client that sends
    requests and never reads had the server hold every answer (without bound). From 16 MB
    unread on, the server stops reading its requests (the 1 MB `kiln/hello`s sent behind wait in
    the pipe, in the client's buffer); once the client reads, every request is answered, none
    lost. (Errors no longer serve to fill it: one quoting a 1 MB method is cut to 500
    characters.)"""
    skill = workspace / ".kiln" / "skills" / "big"
    skill.mkdir(parents=True)
    body = "x" * 200_000  # a skill's text, well within what a SKILL.md may hold
    (skill / "SKILL.md").write_text(f"---\nname: big\ndescription: Big.\n---\n{body}\n")
    server = await RawServer.start(workspace, server_env(kiln_home), read=False)
    try:
        base = {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}
        options = {"initializationOptions": {"index": False}}
        server.request_nowait("init", "initialize", {**base, **options})
        server.notify("initialized", {})
        uses = [f"use-{n}" for n in range(120)]  # 24 MB of answers
        for msg_id in uses:
            server.request_nowait(msg_id, "kiln/skills/use", {"name": "big"})
        hellos = [f"hello-{n}" for n in range(40)]  # 40 MB of requests behind them
        for msg_id in hellos:
            server.request_nowait(msg_id, "kiln/hello", {"pad": "p" * (1 << 20)})
        await server.stderr_says(b"answers unread: not reading from it")
        assert server.proc.stdin is not None
        assert server.proc.stdin.transport.get_write_buffer_size() > 8 * (1 << 20)  # not read
        server.start_reading()
        await server.response(hellos[-1], timeout=120)
        answered = [m["id"] for m in server.messages if "method" not in m]
        assert sorted(answered) == sorted(["init", *uses, *hellos])
        texts = [m["result"] for m in server.messages if str(m.get("id")).startswith("use-")]
        assert all(body in text["block"]["resource"]["text"] for text in texts)
        await server.stderr_says(b"reading from it again")
        assert await server.shutdown_and_exit() == 0
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr
