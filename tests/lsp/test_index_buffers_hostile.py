"""Hostile buffers against the index `kiln lsp` keeps fresh from the editor (docs/security.md,
"The code index"), over the raw JSON-RPC channel: a buffer over the index's 1 MB cap, a buffer
outside the workspace, URIs that are not ``file://``, a change for a document never opened,
incremental changes out of range, a save of a FIFO, a path that is not UTF-8. The server keeps answering, logs no traceback, and the
index holds only what it should."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer

pytestmark = pytest.mark.e2e


def _open(server: RawServer, uri: str, text: str, version: int = 1) -> None:
    doc = {"uri": uri, "languageId": "python", "version": version, "text": text}
    server.notify("textDocument/didOpen", {"textDocument": doc})


async def _hover_hits(server: RawServer, msg_id: Any, uri: str, line: int) -> list[tuple[str, str]]:
    """(name, file) of each hit hover lists for the word at the start of ``line`` of ``uri``."""
    params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": 1}}
    reply = await server.request(msg_id, "textDocument/hover", params)
    assert "result" in reply, reply
    if reply["result"] is None:
        return []
    text = reply["result"]["contents"]["value"]
    rows = [re.fullmatch(r"- `(.+)` `(.+):\d+`", row) for row in text.splitlines()]
    assert all(rows), text
    return [(row[1], row[2]) for row in rows if row]


async def _ready(server: RawServer) -> None:
    await server.index_until(lambda s: s["state"] == "ready")


async def test_hostile_buffers_leave_the_index_and_the_server_sound(
    tmp_path: Path, kiln_home: Path
) -> None:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "app.py").write_text("def greet(name):\n    return name\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    server = await RawServer.start(root, server_env(kiln_home))
    try:
        await server.initialize(root)
        await _ready(server)
        big = "".join(f"def oversized_{n}(value):\n    return value\n" for n in range(40_000))
        assert len(big.encode()) > 1_000_000
        _open(server, (root / "big.py").as_uri(), big)
        _open(server, (outside / "secret.py").as_uri(), "def outside_secret():\n    pass\n")
        _open(server, "untitled:Untitled-1", "def untitled_symbol():\n    pass\n")
        _open(server, "https://example.com/remote.py", "def remote_symbol():\n    pass\n")
        _open(server, "file:relative.py", "def relative_symbol():\n    pass\n")  # cwd is the root
        other_host = "file://fileserver" + (root / "share.py").as_uri()[len("file://") :]
        _open(server, other_host, "def other_host_symbol():\n    pass\n")
        (root / "folder").mkdir()
        _open(server, (root / "folder").as_uri(), "def folder_symbol():\n    pass\n")
        never = {"uri": (root / "never.py").as_uri(), "version": 2}
        server.notify(
            "textDocument/didChange",
            {"textDocument": never, "contentChanges": [{"text": "def never_opened():\n"}]},
        )
        os.mkfifo(root / "pipe.py")  # its open() for reading would wait for a writer forever
        server.notify(
            "textDocument/didSave", {"textDocument": {"uri": (root / "pipe.py").as_uri()}}
        )
        _open(server, root.as_uri() + "/odd%FF%FE.py", "def undecodable_symbol():\n    pass\n")
        small = (root / "small.py").as_uri()
        _open(server, small, "def small_symbol():\n    pass\n")
        far = {"start": {"line": 999, "character": 5}, "end": {"line": 1200, "character": 0}}
        backwards = {"start": {"line": 1, "character": 4}, "end": {"line": 0, "character": 0}}
        server.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": small, "version": 2},
                "contentChanges": [
                    {"range": far, "text": "\ndef appended_symbol():\n    pass\n"},
                    {"range": backwards, "text": ""},
                ],
            },
        )
        probe = (root / "probe.py").as_uri()
        words = ["oversized_7", "outside_secret", "untitled_symbol", "remote_symbol"]
        words += ["relative_symbol", "other_host_symbol", "folder_symbol"]
        words += ["never_opened", "undecodable_symbol", "appended_symbol", "marker_symbol"]
        _open(server, probe, "\n".join(words) + "\n\ndef marker_symbol():\n    pass\n")
        # Buffers are indexed one after another on one thread: once the last one opened is
        # searchable, those before it have been handled.
        for n in range(600):
            if ("marker_symbol", "probe.py") in await _hover_hits(server, f"m{n}", probe, 10):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the probe buffer was never indexed")
        found = {w: await _hover_hits(server, f"h-{w}", probe, i) for i, w in enumerate(words)}
        # Past the end is the end (the text is appended); a range given end first is read start
        # first (as vscode-languageserver-textdocument reads it): the first lines go.
        assert ("appended_symbol", "small.py") in found["appended_symbol"], found
        # Over the cap, outside, not file://, a relative path, another host, a folder, never
        # opened, not UTF-8: none of them is in the index.
        for word in words[:9]:
            assert all(name != word for name, _ in found[word]), (word, found[word])
        assert all(path != "folder" for _, path in found["folder_symbol"]), found["folder_symbol"]
        hello = await server.request("hello", "kiln/hello", {})
        assert hello["result"]["protocolVersion"] == 1
        status = await server.request("status", "kiln/index/status", {})
        assert status["result"]["state"] == "ready" and "error" not in status["result"]
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]
