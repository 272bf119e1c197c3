"""A session live in `kiln acp` that a terminal continued meanwhile (`kiln run --resume`): its
next prompt is refused with "load the session again (session/load)", and that load now brings
the turns the terminal added, so the prompt after it runs. The load used to hand back the stale
copy it already had, and every prompt was refused until the editor restarted Kiln."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from acp import RequestError

from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


async def test_load_after_another_process_continued_the_session(
    spawn, workspace: Path, kiln_home: Path, tmp_path: Path
) -> None:
    client = EditorClient()
    # each load builds its model afresh from the script: the step for "three" is picked by match
    script = [{"match": "three", "text": "editor again"}, "from the editor"]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "one"}])
        terminal = tmp_path / "terminal.json"
        terminal.write_text(json.dumps(["from the terminal"]))
        env = {**os.environ, "KILN_HOME": str(kiln_home), "KILN_PROVIDER": "scripted",
               "KILN_SCRIPT": str(terminal)}  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "run", "--resume", sid, "two"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        with pytest.raises(RequestError) as refused:
            await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "three"}])
        assert "session/load" in str(refused.value.data)
        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "three"}])
    assert result.stop_reason == "end_turn"
    assert client.text().endswith("editor again")
    assert "from the terminal" in client.text()  # replayed by the load
