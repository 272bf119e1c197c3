"""The editor session's index: the small full-text segments that buffer edits leave are merged
once the buffers have been quiet, with the same search results. A real index in a temp folder,
driven through the server's ``IndexSync`` on a real event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from indexer import compact
from lsp_server.lsp import quiet_merge
from lsp_server.lsp.documents import IndexSync


async def test_segments_edits_leave_are_merged_when_the_buffers_are_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quiet_merge, "IDLE_SECONDS", 0.05)
    # FTS5 itself merges a level of EDIT_CRISIS segments inside an edit; here the idle step
    # alone is watched (test_edit_session.py checks the other)
    monkeypatch.setattr(compact, "EDIT_CRISIS", compact.BULK_CRISIS)
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    for n in range(3):
        (root / f"m{n}.py").write_text(f"def start_{n}():\n    return {n}\n")
    sync = IndexSync(root)
    try:
        await sync.open()
        await sync.initial_update(lambda *_: None)
        for n in range(12):  # an edit per update: a segment each, no merging in the edit
            await sync.update_file(root / "m1.py", f"def parcel_{n}(total):\n    return {n}\n")
        assert not sync.merged.is_set()
        assert compact.segments(sync.index._conn, "blocks_fts") > 4
        before = [(h.path, h.name, h.score) for h in sync.index.search("parcel total", 5)]
        await asyncio.wait_for(sync.merged.wait(), timeout=30)
        assert compact.segments(sync.index._conn, "blocks_fts") <= 2
        after = [(h.path, h.name, h.score) for h in sync.index.search("parcel total", 5)]
        assert after == before == [("m1.py", "parcel_11", before[0][2])]
        await sync.update_file(root / "m2.py", "def parcel_total():\n    return 0\n")
        assert not sync.merged.is_set()  # the next edit waits for its own quiet time
        await asyncio.wait_for(sync.merged.wait(), timeout=30)
        assert sync.index.search("parcel total", 1)[0].name == "parcel_total"
    finally:
        sync.close()
        if sync.index is not None:
            sync.index.close()
