"""`kiln/session/list` in pages (PROTOCOL.md §4: `cursor` in, `nextCursor` out).

The listing answered the 50 newest sessions and nothing more, so an editor could not reach an
older one. It now pages as `kiln acp`'s `session/list` does, with the same cursors: following
`nextCursor` lists every session once, newest first; a cursor the server never gave is -32602."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from agent.session_store import SessionStore
from tests.lsp.conftest import running
from tests.lsp.kiln_client import Editor

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


async def _all_pages(editor: Editor, **where: str) -> list[list[str]]:
    pages: list[list[str]] = []
    params: dict[str, Any] = dict(where)
    while True:
        answer = await editor.request("kiln/session/list", params)
        pages.append([s["sessionId"] for s in answer["sessions"]])
        if "nextCursor" not in answer:
            return pages
        params = {**where, "cursor": answer["nextCursor"]}


async def test_pages_reach_every_stored_session_once(workspace: Path, scripted_env: Any) -> None:
    sub = workspace / "sub"
    sub.mkdir()
    mine, theirs = _stored(workspace, 120), _stored(sub, 3)
    async with running(workspace, scripted_env(["Fine."])) as editor:
        pages = await _all_pages(editor)  # the workspace root's sessions
        assert [len(p) for p in pages] == [50, 50, 20]
        listed = [sid for page in pages for sid in page]
        assert sorted(listed) == sorted(mine)  # each once, none of the subfolder's
        assert listed[0] == mine[-1]  # newest first
        assert await _all_pages(editor, cwd=str(sub)) == [theirs[::-1]]

        first = await editor.request("kiln/session/list", {})
        continued = first["sessions"][-1]["sessionId"]  # continued while the client pages
        store = SessionStore()
        store.update(continued, title="continued")
        store.close()
        rest = await editor.request("kiln/session/list", {"cursor": first["nextCursor"]})
        later = [s["sessionId"] for s in rest["sessions"]]
        assert continued not in later and len(later) == 50  # not listed twice

        for bad in ("garbage", "WzEsMl0=", "x" * 500):
            with pytest.raises(JsonRpcException) as err:
                await editor.request("kiln/session/list", {"cursor": bad})
            assert err.value.code == -32602
            message = str(err.value)
            assert "is not a cursor this agent gave" in message and len(message) < 200, message
        with pytest.raises(JsonRpcException) as err:
            await editor.request("kiln/session/list", {"cursor": 5})
        assert err.value.code == -32602 and "cursor" in str(err.value)


async def test_a_short_listing_has_no_cursor(workspace: Path, scripted_env: Any) -> None:
    _stored(workspace, 50)
    async with running(workspace, scripted_env(["Fine."])) as editor:
        answer = await editor.request("kiln/session/list", {})
        assert len(answer["sessions"]) == 50 and "nextCursor" not in answer
