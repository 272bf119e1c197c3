"""An edit approved in an ACP client that writes files but does not read them, its file
swapped for a FIFO between the check and the yes (a command of the same reply can): `kiln acp`
compares the disk with the text the edit was computed on, and opening a FIFO for reading waited
for a writer forever, on the agent's event loop (docs/security.md, section 2)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


class SwappingClient(EditorClient):
    """Replaces ``notes.txt`` with a FIFO while the user is asked, then says yes."""

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kw: Any):  # type: ignore[no-untyped-def]
        notes = Path(self.buffers.pop("root")) / "notes.txt"
        notes.unlink()
        os.mkfifo(notes)
        return await super().request_permission(session_id, tool_call, options, **kw)


async def test_a_file_swapped_for_a_fifo_before_the_yes_does_not_hang_the_agent(
    spawn: Any, workspace: Path
) -> None:
    client = SwappingClient(answer="allow_once", buffers={"root": str(workspace)})
    step = {"name": "write_file", "input": {"path": "notes.txt", "content": "new\n"}}
    async with spawn([{"tool_calls": [step]}, "Done."], client) as agent:
        caps = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=False, write_text_file=True), terminal=False
        )
        await agent.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=caps,
            client_info=Implementation(name="kiln-tests", version="0"),
        )
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        prompt = agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
        result = await asyncio.wait_for(prompt, 60)  # before, it never answered
    assert result.stop_reason == "end_turn"
    assert client.writes == []
    assert (workspace / "notes.txt").is_fifo()
    failed = [u for u in client.updates if u.get("status") == "failed"]
    assert any("not a regular file" in str(u) for u in failed), client.updates
