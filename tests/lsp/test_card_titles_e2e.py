"""A tool call's one-line title in `kiln lsp` (the permission card's and the tool call's): a file
name the model chose is shown, with new lines, tabs, control and bidi characters escaped, so a
name with new lines cannot push the part that says which file it is out of the card, nor
write lines that read like Kiln's own. Through a real LSP client."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import running
from tests.lsp.kiln_client import REJECT

pytestmark = pytest.mark.e2e

PATH = "README.md" + "\n" * 4 + "(approved by your settings)\r\t\u202e\x1b[2K/../setup.py"
# Past the 80 characters a title is cut to: before, the cut came first and took the end away.
LONG = "README.md" + "\n" * 100 + "/../setup.py"


def one_line(title: str) -> bool:
    return title.isprintable() and "setup.py" in title and len(title) <= 81


@pytest.mark.parametrize("path", [PATH, LONG], ids=["controls", "past-the-cut"])
async def test_titles_are_one_line_with_their_end_in_sight(
    workspace: Path, scripted_env: Callable[[list[Any]], dict[str, str]], path: str
) -> None:
    (workspace / "setup.py").write_text("print(1)\n")
    write = {"name": "write_file", "input": {"path": path, "content": "x\n"}}
    env = scripted_env([{"tool_calls": [write]}, "Done."])
    async with running(workspace, env) as editor:
        editor.on_permission = lambda params: REJECT
        session = await editor.request("kiln/session/new", {"mode": "ask"})
        await editor.request(
            "kiln/session/prompt",
            {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "go"}]},
        )
        params = {"sessionId": session["sessionId"], "replay": True}
        await editor.request("kiln/session/load", params)  # the title again, from the store
    (asked,) = editor.permission_requests
    shown = [u["update"]["title"] for u in editor.updates
             if u["update"].get("sessionUpdate") == "tool_call"]  # fmt: skip
    assert one_line(asked["toolCall"]["title"]), asked["toolCall"]["title"]
    assert len(shown) == 2 and all(one_line(t) for t in shown), shown
    assert asked["toolCall"]["rawInput"]["path"] == path  # the arguments stay as they were
    assert (workspace / "setup.py").read_text() == "print(1)\n"
