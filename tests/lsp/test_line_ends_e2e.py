"""`kiln lsp`: a Windows document the agent rewrites with ``write_file`` (content with ``\\n``, as
models write) keeps its ``\\r\\n``, so the editor gets the changed line and not every line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.conftest import running

pytestmark = pytest.mark.e2e

CRLF = "def add(a, b):\r\n    return a - b\r\n\r\nX = 1\r\n"


async def test_write_file_keeps_the_documents_crlf(workspace: Path, scripted_env: object) -> None:
    (workspace / "win.py").write_bytes(CRLF.encode())
    content = CRLF.replace("\r\n", "\n").replace("a - b", "a + b")
    steps = [
        {
            "text": "",
            "tool_calls": [{"name": "write_file", "input": {"path": "win.py", "content": content}}],
        },
        "done",
    ]
    async with running(workspace, scripted_env(steps), settings={"editMode": "auto"}) as editor:  # type: ignore[operator]
        uri = editor.open(workspace / "win.py", CRLF)
        sid = (await editor.request("kiln/session/new", {"editMode": "auto"}))["sessionId"]
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "fix"})
        assert result["filesModified"] == ["win.py"], result
        assert editor.docs[uri].source == CRLF.replace("a - b", "a + b")
        edits = editor.apply_requests[0]["edit"]["documentChanges"][0]["edits"]
        assert len(edits) == 1 and edits[0]["range"]["start"]["line"] == 1, edits
