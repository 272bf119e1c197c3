"""An index file moved over `.kiln/index.db` under a running `kiln lsp` (another process's
rebuild, a restored backup): the agent's `search_code` then reads the file now there, and an
editor's unsaved buffer is indexed into it, where searches look (``Database.follow_swap``)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from indexer import Index
from tests.lsp.raw_client import RawServer

pytestmark = pytest.mark.e2e

_ids = itertools.count()


async def _search(server: RawServer, sid: str) -> str:
    """One prompt whose turn runs the next scripted `search_code`: its output text."""
    reply = await server.request(
        next(_ids), "kiln/session/prompt", {"sessionId": sid, "prompt": "go"}
    )
    assert reply["result"]["stopReason"] == "end_turn", reply
    done = [
        m["params"]["update"]
        for m in server.messages
        if m.get("method") == "kiln/session/update"
        and m["params"]["update"].get("sessionUpdate") == "tool_call_update"
        and m["params"]["update"].get("status") in ("completed", "failed")
    ][-1]
    assert done["status"] == "completed", done
    return str(done["content"][0]["content"]["text"])


async def test_a_file_moved_over_the_index_is_searched_and_written_by_the_server(
    tmp_path: Path, scripted_env: Any
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("def quokka():\n    pass\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.py").write_text("def zebra():\n    pass\n")
    with Index(other) as idx:
        idx.update()
    steps: list[Any] = []
    for query in ("quokka", "zebra", "gannet"):
        steps += [{"text": "", "tool_calls": [{"name": "search_code", "input": {"query": query}}]}]
        steps += ["done"]
    server = await RawServer.start(root, scripted_env(steps))
    try:
        await server.initialize(root)
        await server.index_until(lambda s: s["state"] == "ready" and s["pendingFiles"] == 0)
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        assert "function quokka" in await _search(server, sid)
        os.replace(other / ".kiln" / "index.db", root / ".kiln" / "index.db")
        text = await _search(server, sid)
        assert "function zebra" in text and "b.py" in text, text
        doc = {
            "uri": (root / "draft.py").as_uri(),
            "languageId": "python",
            "version": 1,
            "text": "def gannet():\n    pass\n",
        }
        server.notify("textDocument/didOpen", {"textDocument": doc})
        await server.index_until(lambda s: s["pendingFiles"] == 0)
        assert "function gannet" in await _search(server, sid)
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]
