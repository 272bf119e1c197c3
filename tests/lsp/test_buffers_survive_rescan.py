"""An unsaved buffer stays searchable when the disk changes under `kiln lsp` (over the raw
JSON-RPC channel): a folder created in the workspace makes the watcher rescan the whole tree,
and that scan walks the disk, where a buffer never saved is not. It used to drop the buffer's
rows: hover (and the agent's ``search_code``) then found nothing of a buffer it had found a
moment before (seen as an intermittent failure of test_index_buffers_hostile.py, which
creates a folder while the watcher may already be running)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer
from tests.lsp.test_index_buffers_hostile import _hover_hits, _open

pytestmark = pytest.mark.e2e


async def _watching(server: RawServer) -> None:
    await server.index_until(lambda s: s["state"] == "ready" and s["watching"])


async def _until_found(server: RawServer, tag: str, uri: str, line: int, hit: tuple) -> None:
    for n in range(600):
        if hit in await _hover_hits(server, f"{tag}{n}", uri, line):
            return
        await asyncio.sleep(0.1)
    tail = server.stderr.decode(errors="replace")[-3000:]
    status = await server.request(f"{tag}-status", "kiln/index/status", {})
    raise AssertionError(f"{hit} never found; status {status}; stderr tail:\n{tail}")


async def test_a_rescan_of_the_disk_keeps_an_unsaved_buffer_searchable(
    tmp_path: Path, kiln_home: Path
) -> None:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "app.py").write_text("def greet(name):\n    return name\n")
    server = await RawServer.start(root, server_env(kiln_home))
    try:
        await server.initialize(root)
        await _watching(server)
        probe = (root / "probe.py").as_uri()  # never saved: no probe.py on the disk
        _open(server, probe, "marker_symbol\nscanned_newcomer\n\ndef marker_symbol():\n    pass\n")
        await _until_found(server, "m", probe, 0, ("marker_symbol", "probe.py"))
        (root / "newpkg").mkdir()  # a folder: the watcher rescans the whole tree
        (root / "newpkg" / "fresh.py").write_text("def scanned_newcomer():\n    pass\n")
        # the rescan has run once it has indexed the new file
        await _until_found(server, "s", probe, 1, ("scanned_newcomer", "newpkg/fresh.py"))
        after = await _hover_hits(server, "after", probe, 0)
        assert ("marker_symbol", "probe.py") in after, after
        # Another process holding the index's write lock: a search reads what was committed.
        other = sqlite3.connect(root / ".kiln" / "index.db", isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("DELETE FROM meta WHERE key = 'last_indexed'")  # never committed
            locked = await _hover_hits(server, "locked", probe, 0)
            assert ("marker_symbol", "probe.py") in locked, locked
        finally:
            other.execute("ROLLBACK")
            other.close()
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]
