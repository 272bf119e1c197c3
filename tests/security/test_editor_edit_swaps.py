"""An edit approved in an editor, its file swapped meanwhile (docs/security.md, section 2).
Between the check and the user's yes a command running in the same reply (a repository's
Makefile under an allow rule) can replace the file with a FIFO: `kiln lsp` compares the disk
with the text the edit was computed on before it writes or sends the edit, and opening a FIFO
for reading waits for a writer forever, on the server's event loop. Through the real `kiln lsp`
with the scripted model: the swap is made while the permission is asked."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import running, server_env
from tests.lsp.kiln_client import ALLOW

pytestmark = pytest.mark.e2e


def _swap_for_a_fifo(path: Path) -> Any:
    def answer(params: dict[str, Any]) -> Any:
        path.unlink()
        os.mkfifo(path)
        return ALLOW

    return answer


@pytest.mark.parametrize("apply_edit", [True, False])
async def test_a_file_swapped_for_a_fifo_before_the_yes_does_not_hang_the_server(
    tmp_path: Path, kiln_home: Path, apply_edit: bool
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.md").write_text("old notes\n")
    script = tmp_path / "script.json"
    step = {"name": "write_file", "input": {"path": "notes.md", "content": "new notes\n"}}
    script.write_text(json.dumps([{"text": "", "tool_calls": [step]}, "done"]))
    env = server_env(kiln_home, KILN_PROVIDER="scripted", KILN_SCRIPT=str(script))
    async with running(root, env, apply_edit=apply_edit) as editor:
        editor.on_permission = _swap_for_a_fifo(root / "notes.md")
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "go"})
        assert result["stopReason"] == "end_turn", result
        assert result["filesModified"] == []
        assert editor.apply_requests == []
        assert (root / "notes.md").is_fifo()
        failed = [u for u in editor.updates_for(sid, "tool_call_update") if u.get("status")]
        assert any("not a regular file" in json.dumps(u) for u in failed), failed
        assert (await editor.request("kiln/hello", {}))["capabilities"]
