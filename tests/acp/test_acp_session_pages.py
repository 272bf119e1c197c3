"""`session/list` in pages (ACP: `cursor` in, `nextCursor` out; docs/acp.md).

The listing stopped at the 50 newest sessions without a `nextCursor`, so a client could not
reach an older one. Pages now carry a cursor while more follow; following it lists every
session once, newest first, even while sessions are continued meanwhile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from tests.acp.conftest import EditorClient
from tests.session_pages import (
    BAD_CURSORS,
    NOT_A_CURSOR,
    Pager,
    all_pages,
    continued_meanwhile_is_listed_once,
    stored,
)

pytestmark = pytest.mark.e2e


def _pages(conn: Any, **where: str) -> Pager:
    async def page(cursor: str | None) -> tuple[list[str], str | None]:
        answer = await conn.list_sessions(cursor=cursor, **where)
        return [s.session_id for s in answer.sessions], answer.next_cursor

    return page


async def test_pages_reach_every_stored_session_once(
    spawn: Any, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    mine, theirs = stored(workspace, 120), stored(other, 3)
    async with spawn(["Fine."], EditorClient()) as agent:
        await agent.start()
        pages = await all_pages(_pages(agent.conn, cwd=str(workspace)))
        assert [len(p) for p in pages] == [50, 50, 20]
        listed = [sid for page in pages for sid in page]
        assert sorted(listed) == sorted(mine)  # each once, none of the other folder
        assert listed[0] == mine[-1]  # newest first
        everything = await all_pages(_pages(agent.conn))
        assert [len(p) for p in everything] == [50, 50, 23]
        assert sorted(sid for page in everything for sid in page) == sorted(mine + theirs)

        await continued_meanwhile_is_listed_once(_pages(agent.conn, cwd=str(workspace)))

        for bad in BAD_CURSORS:
            with pytest.raises(RequestError) as err:
                await agent.conn.list_sessions(cursor=bad)
            message = str(err.value)
            assert err.value.code == -32602 and NOT_A_CURSOR in message
            assert len(message) < 200, message


async def test_a_short_listing_has_no_cursor(spawn: Any, workspace: Path) -> None:
    stored(workspace, 50)
    async with spawn(["Fine."], EditorClient()) as agent:
        await agent.start()
        answer = await agent.conn.list_sessions(cwd=str(workspace))
        assert len(answer.sessions) == 50 and answer.next_cursor is None
