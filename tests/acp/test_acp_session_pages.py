"""`session/list` in pages (ACP: `cursor` in, `nextCursor` out; docs/acp.md).

The listing stopped at the 50 newest sessions without a `nextCursor`, so a client could not
reach an older one. Pages now carry a cursor while more follow; following it lists every
session once, newest first, even while sessions are continued meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from agent.session_store import SessionStore
from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


def _stored(root: Path, count: int) -> list[str]:
    store = SessionStore()  # the same KILN_HOME as the server's
    try:
        return [
            store.create(root, provider="scripted", model="m", mode="ask", title=f"t{i}")
            for i in range(count)
        ]
    finally:
        store.close()


async def _all_pages(conn, **where: str) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        answer = await conn.list_sessions(cursor=cursor, **where)
        pages.append([s.session_id for s in answer.sessions])
        if answer.next_cursor is None:
            return pages
        cursor = answer.next_cursor


async def test_pages_reach_every_stored_session_once(
    spawn, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    mine, theirs = _stored(workspace, 120), _stored(other, 3)
    async with spawn(["Fine."], EditorClient()) as agent:
        await agent.start()
        pages = await _all_pages(agent.conn, cwd=str(workspace))
        assert [len(p) for p in pages] == [50, 50, 20]
        listed = [sid for page in pages for sid in page]
        assert sorted(listed) == sorted(mine)  # each once, none of the other folder
        assert listed[0] == mine[-1]  # newest first
        everything = await _all_pages(agent.conn)
        assert [len(p) for p in everything] == [50, 50, 23]
        assert sorted(sid for page in everything for sid in page) == sorted(mine + theirs)

        first = await agent.conn.list_sessions(cwd=str(workspace))
        continued = first.sessions[-1].session_id  # continued while the client pages
        store = SessionStore()
        store.update(continued, title="continued")
        store.close()
        rest = await agent.conn.list_sessions(cwd=str(workspace), cursor=first.next_cursor)
        later = [s.session_id for s in rest.sessions]
        assert continued not in later and len(later) == 50  # not listed twice

        for bad in ("garbage", "WzEsMl0=", "x" * 500):
            with pytest.raises(RequestError) as err:
                await agent.conn.list_sessions(cursor=bad)
            message = str(err.value)
            assert err.value.code == -32602 and "is not a cursor this agent gave" in message
            assert len(message) < 200, message


async def test_a_short_listing_has_no_cursor(spawn, workspace: Path) -> None:
    _stored(workspace, 50)
    async with spawn(["Fine."], EditorClient()) as agent:
        await agent.start()
        answer = await agent.conn.list_sessions(cwd=str(workspace))
        assert len(answer.sessions) == 50 and answer.next_cursor is None
