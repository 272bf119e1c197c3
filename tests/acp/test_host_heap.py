"""A server process settles its heap after the first turn (``lsp_server.core.heap``): what
survives a collection then is frozen out of later full collections, which walk only what came
after. A process that embeds the session core without enabling it keeps its collector as it was.
"""

from __future__ import annotations

import asyncio
import gc
import json
import weakref
from pathlib import Path

import pytest

from lsp_server.acp.frontend import AcpFrontend
from lsp_server.core import CoreConfig, SessionManager, heap
from tests.acp.conftest import EditorClient
from tests.acp.test_frontend import RecordingClient
from tests.waiting import until


@pytest.fixture
def fresh_heap(monkeypatch):
    monkeypatch.setattr(heap, "_enabled", False)
    monkeypatch.setattr(heap, "_settled", False)
    monkeypatch.setattr(heap, "_scanned", False)
    monkeypatch.setattr(heap, "SETTLE_DELAY", 0.0)
    gc.unfreeze()
    yield
    gc.unfreeze()


async def _two_turns(tmp_path: Path, monkeypatch) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["one", "two"]))
    monkeypatch.setenv("KILN_SCRIPT", str(script))
    manager = SessionManager(AcpFrontend(RecordingClient()), config=CoreConfig.from_options(
        {"provider": "scripted"}))  # fmt: skip
    session = await manager.new_session(str(workspace.resolve()))
    assert await manager.prompt(session.id, "hello") == "end_turn"
    await asyncio.sleep(0.05)  # the settle is scheduled after the turn, not inside it
    frozen_after_first = gc.get_freeze_count()
    assert await manager.prompt(session.id, "again") == "end_turn"
    await asyncio.sleep(0.05)
    await manager.shutdown()
    return frozen_after_first


async def test_a_server_freezes_what_survives_its_first_turn_once(
    tmp_path: Path, kiln_home: Path, monkeypatch, fresh_heap
) -> None:
    heap.enable()
    settles: list[bool] = []
    real = heap.settle
    monkeypatch.setattr(heap, "settle", lambda: settles.append(real()) or settles[-1])
    frozen = await _two_turns(tmp_path, monkeypatch)
    assert frozen > 10_000  # the modules, the session, the provider: all out of full walks
    assert settles == [True]  # the second turn does not settle again


async def test_cycles_made_after_the_settle_are_still_collected(
    tmp_path: Path, kiln_home: Path, monkeypatch, fresh_heap
) -> None:
    heap.enable()
    await _two_turns(tmp_path, monkeypatch)
    assert gc.get_freeze_count() > 0

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a
    probe = weakref.ref(a)
    del a, b
    gc.collect()
    assert probe() is None


async def test_an_embedding_process_keeps_its_collector(
    tmp_path: Path, kiln_home: Path, monkeypatch, fresh_heap
) -> None:
    assert await _two_turns(tmp_path, monkeypatch) == 0
    assert gc.get_freeze_count() == 0


async def test_the_acp_server_settles_after_its_first_turn(spawn, workspace: Path) -> None:
    """The real `kiln acp` process: its debug log says when, and how much, it froze."""
    client = EditorClient()
    async with spawn(["one"], client, KILN_LOG_LEVEL="debug") as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        assert "heap settled" not in agent.stderr.read_text()
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "hi"}])
        assert result.stop_reason == "end_turn"
        await until(lambda: "heap settled" in agent.stderr.read_text(), what="the settle")
    line = next(x for x in agent.stderr.read_text().splitlines() if "heap settled" in x)
    assert int(line.split("heap settled: ")[1].split()[0]) > 10_000


async def test_the_first_index_scan_freezes_once_and_the_first_turn_still_settles(
    tmp_path: Path, kiln_home: Path, monkeypatch, fresh_heap
) -> None:
    """`kiln lsp` freezes what its first scan leaves (the editor re-indexes and searches each
    keystroke long before any turn), and its first turn still settles what it loads."""
    heap.after_first_scan()
    assert gc.get_freeze_count() == 0  # not a server process: the collector as it was
    heap.enable()
    heap.after_first_scan()
    scanned = gc.get_freeze_count()
    assert scanned > 10_000
    heap.after_first_scan()  # once
    assert gc.get_freeze_count() == scanned
    await _two_turns(tmp_path, monkeypatch)
    assert gc.get_freeze_count() > scanned  # the provider and the session, frozen after
