"""A hover searches after what the editor told the server before it, through a real `kiln lsp`:
a hover with nothing typed since the last one starts its search at once, without a stop on the
index thread, but only when nothing is queued there. Closing a buffer queues the file's disk
text for the index; a hover sent right behind the close must find what the disk holds, not
what the closed buffer held."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer
from tests.lsp.test_index_buffers_hostile import _hover_hits, _open, _ready

pytestmark = pytest.mark.e2e

# Enough definitions that re-indexing the file from the disk takes a while.
PADDING = "".join(f"def filler_{n}(value):\n    return value + {n}\n\n" for n in range(3000))


async def test_a_hover_right_after_a_close_finds_what_the_disk_holds(
    tmp_path: Path, kiln_home: Path
) -> None:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    lib = root / "lib.py"
    lib.write_text("def disk_side_name():\n    pass\n\n" + PADDING)
    server = await RawServer.start(root, server_env(kiln_home))
    try:
        await server.initialize(root)
        await _ready(server)
        probe = (root / "probe.py").as_uri()  # never saved: a buffer to hover in
        _open(server, probe, "disk_side_name\n")
        assert ("disk_side_name", "lib.py") in await _hover_hits(server, "disk", probe, 0)
        _open(server, lib.as_uri(), "def buffer_side_name():\n    pass\n\n" + PADDING)
        hits = await _hover_hits(server, "buffer", probe, 0)  # the buffer replaces the disk's
        assert ("disk_side_name", "lib.py") not in hits, hits
        for n in range(5):  # each round: the buffer again, then closed behind a hover
            _open(server, lib.as_uri(), "def buffer_side_name():\n    pass\n\n" + PADDING, n + 2)
            await _hover_hits(server, f"typed{n}", probe, 0)  # the buffer is in the index
            server.notify("textDocument/didClose", {"textDocument": {"uri": lib.as_uri()}})
            hits = await _hover_hits(server, f"closed{n}", probe, 0)
            assert ("disk_side_name", "lib.py") in hits, (n, hits)
    finally:
        await server.close()
