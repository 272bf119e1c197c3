"""An index file moved over `.kiln/index.db` under a running `kiln lsp` (another process's
rebuild, a restored backup): the agent's `search_code` then reads the file now there, and an
editor's unsaved buffer is indexed into it, where searches look (``Database.follow_swap``)."""

from __future__ import annotations

import itertools
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from indexer import Index
from tests.lsp.raw_client import RawServer
from tests.waiting import until

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


def _in_index(db: Path, name: str) -> bool:
    """Whether the index file holds a block named ``name`` (read as another process would)."""
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT 1 FROM blocks WHERE name = ?", (name,)).fetchone() is not None
    except sqlite3.Error:  # caught between the swap and the first rows
        return False
    finally:
        conn.close()


def _noted(db: Path) -> bool:
    """Whether the server's pairing note names the file now at ``db``: until then the old
    file's ``-wal`` lies beside it and a read of it here would apply that."""
    note = db.with_name("index.db-pair")
    return note.exists() and note.read_text().split()[:2] == [
        str(os.stat(db).st_dev),
        str(os.stat(db).st_ino),
    ]


async def test_unsaved_buffers_are_written_into_a_file_swapped_in_without_an_edit(
    tmp_path: Path, scripted_env: Any
) -> None:
    """After a file moved over the index was filled by the watcher's full scan, the editor's
    open buffers were missing from it (the scan keeps an open file's rows: the old file's, here
    none) until each was typed in again. They are now written once the scan is in, with no
    search or edit to prompt it, and the agent's search finds them."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("def quokka():\n    pass\n")
    (root / "b.py").write_text("def saved_text():\n    pass\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "c.py").write_text("def zebra():\n    pass\n")
    with Index(other) as idx:
        idx.update()
    db = root / ".kiln" / "index.db"
    search = {
        "text": "",
        "tool_calls": [{"name": "search_code", "input": {"query": "pelican gannet"}}],
    }
    server = await RawServer.start(root, scripted_env([search, "done"]))
    try:
        await server.initialize(root)
        await server.index_until(lambda s: s["state"] == "ready" and s["pendingFiles"] == 0)
        for name, text in (("draft.py", "def gannet():\n    pass\n"),
                           ("b.py", "def pelican():\n    pass\n")):  # fmt: skip
            doc = {"uri": (root / name).as_uri(), "languageId": "python", "version": 1,
                   "text": text}  # fmt: skip
            server.notify("textDocument/didOpen", {"textDocument": doc})
        await server.index_until(lambda s: s["pendingFiles"] == 0)
        await until(lambda: _in_index(db, "gannet") and _in_index(db, "pelican"))
        os.replace(other / ".kiln" / "index.db", db)  # noticed by the watcher, no search
        await until(lambda: _noted(db), what="the server on the new file")  # before, a read
        await until(lambda: _in_index(db, "quokka"), what="the full scan of the new file")
        await until(
            lambda: _in_index(db, "gannet") and _in_index(db, "pelican"),
            timeout=20, what="the unsaved buffers written into the new file",
        )  # fmt: skip
        assert not _in_index(db, "saved_text")  # b.py's rows are its buffer's, not the disk's
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        text = await _search(server, sid)
        assert "function gannet" in text and "function pelican" in text, text
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]
