"""A cancel that arrives right behind its prompt, before the turn has started, stops it.

An ACP client that cancels at once (a stop click, an aborted request signal) sends
`session/cancel` or `$/cancel_request` in the same write as the prompt. The server then handles
the cancel after the prompt has scheduled its turn but before that turn has run a line: the
session had no running task to cancel, so the cancel was dropped and the turn ran to its end
(here: it would wait on the model forever).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from lsp_server.acp.frontend import AcpFrontend
from lsp_server.core import CoreConfig, SessionManager
from tests.acp.test_frontend import RecordingClient


async def test_a_cancel_before_the_turn_starts_stops_it(
    tmp_path: Path, kiln_home: Path, monkeypatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"wait_for": str(tmp_path / "never")}, "too late"]))
    monkeypatch.setenv("KILN_SCRIPT", str(script))
    manager = SessionManager(AcpFrontend(RecordingClient()), config=CoreConfig.from_options(
        {"provider": "scripted"}))  # fmt: skip
    session = await manager.new_session(str(workspace.resolve()))
    turn = asyncio.ensure_future(manager.prompt(session.id, "hello"))
    await asyncio.sleep(0)  # the prompt schedules its turn; the turn itself has not run yet
    assert manager.is_busy(session.id)
    manager.cancel(session.id)  # as the cancel handled right behind the prompt
    done, _ = await asyncio.wait([turn], timeout=30)  # (wait_for would hard-cancel it)
    assert turn in done and turn.result() == "cancelled"
    assert not manager.is_busy(session.id)
    await manager.shutdown()
