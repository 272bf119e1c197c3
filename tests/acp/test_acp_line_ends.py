"""A Windows file written whole by the agent keeps its ``\\r\\n`` under `kiln acp`: written by
the client (which hands the text out with ``\\n``, as editors hold it) or on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e

CRLF = b"def add(a, b):\r\n    return a - b\r\n\r\nX = 1\r\n"
REWRITTEN = "def add(a, b):\n    return a + b\n\nX = 1\n"


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": args}]}


async def _run(spawn, workspace: Path, client: EditorClient, script: list, fs: bool) -> None:
    async with spawn(script, client) as agent:
        await agent.start(fs=fs)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
    assert result.stop_reason == "end_turn"


async def test_the_client_is_sent_the_files_line_ends(spawn, workspace: Path) -> None:
    (workspace / "win.py").write_bytes(CRLF)
    client = EditorClient(answer="allow_once")  # reads the file as text: \r\n become \n
    await _run(
        spawn,
        workspace,
        client,
        [call("write_file", path="win.py", content=REWRITTEN), "Done."],
        True,
    )
    assert client.writes == [(str(workspace / "win.py"), REWRITTEN.replace("\n", "\r\n"))]


async def test_on_disk_a_write_and_an_added_line_keep_crlf(spawn, workspace: Path) -> None:
    (workspace / "win.py").write_bytes(CRLF)
    script = [
        call("write_file", path="win.py", content=REWRITTEN),
        call("edit_file", path="win.py", old_text="X = 1", new_text="X = 1\nY = 2"),
        "Done.",
    ]
    await _run(spawn, workspace, EditorClient(answer="allow_always"), script, False)
    assert (workspace / "win.py").read_bytes() == REWRITTEN.replace(
        "\n", "\r\n"
    ).encode() + b"Y = 2\r\n"
