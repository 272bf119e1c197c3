"""Line numbers a client sends in `kiln/*` methods are LSP lines: a line ends at `\\n`, `\\r\\n` or
`\\r` only, as in every position of the text sync (a form feed, `\\x85` or U+2028 inside a line
ends nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.session_store import SessionStore
from tests.lsp.conftest import running

pytestmark = pytest.mark.e2e

TEXT = "page = 1\x0c\ntarget = 'a\u2028b\x85c'\r\nlast = 3\rend = 4\n"


def _user_texts(session_id: str) -> str:
    return "\n".join(
        str(block.get("text", ""))
        for message in SessionStore().messages(session_id)
        if message["role"] == "user"
        for block in message["content"]
    )


async def test_a_resource_link_range_names_lsp_lines(workspace: Path, scripted_env: Any) -> None:
    """A selection of LSP line 1 of a buffer holding a form feed on line 0 and U+2028 and
    `\\x85` on line 1 reached the model as an empty line (Python's splitlines counts those as
    line ends); it is now the line the editor shows, whole, and so are lines after a lone CR."""
    (workspace / "doc.py").write_text(TEXT, encoding="utf-8", newline="")
    async with running(workspace, scripted_env(["one", "two"])) as editor:
        uri = editor.open(workspace / "doc.py", TEXT)
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        for first, last in ((1, 1), (3, 3)):
            link = {
                "type": "resource_link",
                "uri": uri,
                "name": "doc.py",
                "range": {
                    "start": {"line": first, "character": 0},
                    "end": {"line": last, "character": 0},
                },
            }
            await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": [link]})
    seen = _user_texts(sid)
    wrapper = '<external_content source="file:doc.py">'
    assert f"lines=\"2-2\">\n{wrapper}\ntarget = 'a\u2028b\x85c'\n</external_content>" in seen
    assert f'lines="4-4">\n{wrapper}\nend = 4\n</external_content>\n</reference>' in seen
