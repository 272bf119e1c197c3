"""The work-done progress of the first index scan, which never waits for the client.

LSP lets a server report progress on a token only once the client has answered
``window/workDoneProgress/create`` (and never after an error answer). Indexing starts at once
either way: the token is asked for in the background, the progress begins when the answer
arrives (at the percentage reached by then), and a scan that is over before the answer (or a
client that never answers) shows no progress at all. Before, the scan waited up to 5 s for
the answer.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from lsp_server.lsp.server import KilnServer

log = logging.getLogger("kiln.lsp")
TITLE = "Kiln: indexing"


class IndexProgress:
    """One scan's progress: ``asked`` (create sent), ``begun``, then ``ended``; reports and the
    end reach the client only while it is begun. Use on the event loop's thread."""

    def __init__(self, ls: KilnServer, token: str) -> None:
        self.ls, self.token = ls, token
        self.state = "asked"
        self.percent = 0

    async def ask(self) -> None:
        """Ask the client for the token; begin once it is granted, unless the scan is over."""
        try:
            await self.ls.work_done_progress.create_async(self.token)
        except Exception as exc:  # noqa: BLE001 - progress is optional
            log.info("no progress token: %s", str(exc) or type(exc).__name__)
            self.state = "ended"
            return
        if self.state != "asked":
            return  # the scan ended before the answer: nothing to show any more
        self.state = "begun"
        begin = types.WorkDoneProgressBegin(title=TITLE, percentage=self.percent, cancellable=False)
        self.ls.work_done_progress.begin(self.token, begin)

    def report(self, done: int, total: int, percent: int) -> None:
        self.percent = percent
        if self.state == "begun":
            value = types.WorkDoneProgressReport(
                message=f"{done}/{total} files", percentage=percent
            )
            self.ls.work_done_progress.report(self.token, value)

    def scan_over(self) -> None:
        """The scan is done (``kiln/index/status`` already says ready): a token granted from
        now on begins nothing, though the end message is still to be written."""
        if self.state == "asked":
            self.state = "ended"

    def end(self, message: str) -> None:
        """End the progress if it began; nothing is sent for this token afterwards."""
        if self.state == "begun":
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.state = "ended"
