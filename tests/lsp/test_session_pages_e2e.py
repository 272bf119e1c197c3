"""`kiln/session/list` in pages (PROTOCOL.md §4: `cursor` in, `nextCursor` out).

The listing answered the 50 newest sessions and nothing more, so an editor could not reach an
older one. It now pages as `kiln acp`'s `session/list` does, with the same cursors: following
`nextCursor` lists every session once, newest first; a cursor the server never gave is -32602."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import running
from tests.lsp.kiln_client import Editor
from tests.session_pages import (
    BAD_CURSORS,
    NOT_A_CURSOR,
    Pager,
    all_pages,
    continued_meanwhile_is_listed_once,
    stored,
)

pytestmark = pytest.mark.e2e


def _pages(editor: Editor, **where: str) -> Pager:
    async def page(cursor: str | None) -> tuple[list[str], str | None]:
        params = {**where, **({} if cursor is None else {"cursor": cursor})}
        answer = await editor.request("kiln/session/list", params)
        # the last page leaves nextCursor out (never null)
        assert answer.get("nextCursor", "left out") is not None, answer
        return [s["sessionId"] for s in answer["sessions"]], answer.get("nextCursor")

    return page


async def test_pages_reach_every_stored_session_once(workspace: Path, scripted_env: Any) -> None:
    sub = workspace / "sub"
    sub.mkdir()
    mine, theirs = stored(workspace, 120), stored(sub, 3)
    async with running(workspace, scripted_env(["Fine."])) as editor:
        pages = await all_pages(_pages(editor))  # the workspace root's sessions
        assert [len(p) for p in pages] == [50, 50, 20]
        listed = [sid for page in pages for sid in page]
        assert sorted(listed) == sorted(mine)  # each once, none of the subfolder's
        assert listed[0] == mine[-1]  # newest first
        assert await all_pages(_pages(editor, cwd=str(sub))) == [theirs[::-1]]

        await continued_meanwhile_is_listed_once(_pages(editor))

        for bad in BAD_CURSORS:
            with pytest.raises(JsonRpcException) as err:
                await editor.request("kiln/session/list", {"cursor": bad})
            assert err.value.code == -32602
            message = str(err.value)
            assert NOT_A_CURSOR in message and len(message) < 200, message
        with pytest.raises(JsonRpcException) as err:
            await editor.request("kiln/session/list", {"cursor": 5})
        assert err.value.code == -32602 and "cursor" in str(err.value)


async def test_a_short_listing_has_no_cursor(workspace: Path, scripted_env: Any) -> None:
    stored(workspace, 50)
    async with running(workspace, scripted_env(["Fine."])) as editor:
        answer = await editor.request("kiln/session/list", {})
        assert len(answer["sessions"]) == 50 and "nextCursor" not in answer
