"""What the paged session listings of both servers are tested with: `kiln acp`'s `session/list`
and `kiln lsp`'s `kiln/session/list` give the same pages and the same cursors. Sessions are
stored straight into the store the server reads (the same ``KILN_HOME``); a client follows the
cursors to the last page through ``page``, a callable over its own protocol that answers one
page: the page's session ids and its ``nextCursor`` (None on the last page)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from agent.session_store import SessionStore

PAGE = 50  # sessions in a full page
BAD_CURSORS = ("garbage", "WzEsMl0=", "x" * 500)  # no base64, base64 of no cursor, too long
NOT_A_CURSOR = "is not a cursor this agent gave"

Pager = Callable[[str | None], Awaitable[tuple[list[str], str | None]]]


def stored(root: Path, count: int) -> list[str]:
    """``count`` sessions of the folder ``root``, oldest first."""
    store = SessionStore()  # the same KILN_HOME as the server's
    try:
        return [
            store.create(root, provider="scripted", model="m", mode="ask", title=f"t{i}")
            for i in range(count)
        ]
    finally:
        store.close()


async def all_pages(page: Pager) -> list[list[str]]:
    """The session ids of every page, following the cursors from the first to the last."""
    pages, cursor = [], None
    while True:
        ids, cursor = await page(cursor)
        pages.append(ids)
        if cursor is None:
            return pages


async def continued_meanwhile_is_listed_once(page: Pager) -> None:
    """A session of the first page is continued (by another process) while the client pages:
    the next page does not list it again, and is still a full page."""
    first, cursor = await page(None)
    assert cursor is not None, "the first page has no nextCursor"
    store = SessionStore()
    try:
        store.update(first[-1], title="continued")
    finally:
        store.close()
    later, _ = await page(cursor)
    assert first[-1] not in later and len(later) == PAGE
