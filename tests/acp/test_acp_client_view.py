"""Client capabilities ACP types as booleans, through the real `kiln acp` over raw frames.

ACP's schema reads a capability flag that is not a boolean as its default, false
(``x-deserialize-default-on-error``), as the official SDKs do; the Python SDK turned ``1``,
``"yes"`` and ``"true"`` into true, so Kiln sent ``fs/*`` requests to a client that had not
advertised them."""

from __future__ import annotations

import asyncio
import json
import os
from asyncio.subprocess import PIPE
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import KILN_ACP

pytestmark = pytest.mark.e2e


async def test_flags_that_are_not_booleans_advertise_nothing(
    workspace: Path, kiln_home: Path, tmp_path: Path
) -> None:
    calls = {"tool_calls": [
        {"name": "read_file", "input": {"path": "notes.txt"}},
        {"name": "write_file", "input": {"path": "new.txt", "content": "from the agent\n"}},
    ]}  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps([calls, "Done."]), encoding="utf-8")
    env = {"KILN_HOME": str(kiln_home), "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "PATH": os.environ["PATH"]}  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *KILN_ACP, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    asked: list[str] = []

    async def call(msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        frame = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        proc.stdin.write((json.dumps(frame) + "\n").encode())  # type: ignore[union-attr]
        while True:
            line = await asyncio.wait_for(proc.stdout.readline(), 60)  # type: ignore[union-attr]
            assert line, "kiln acp closed its output"
            message = json.loads(line)
            if "method" in message and "id" in message:  # a request of the agent's: refuse it
                asked.append(message["method"])
                error = {"code": -32601, "message": "Method not found"}
                answer = {"jsonrpc": "2.0", "id": message["id"], "error": error}
                proc.stdin.write((json.dumps(answer) + "\n").encode())  # type: ignore[union-attr]
            elif message.get("id") == msg_id and "method" not in message:
                return message

    try:
        caps = {"fs": {"readTextFile": 1, "writeTextFile": "true"}, "terminal": "yes"}
        init = await call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        assert init["result"]["protocolVersion"] == 1, init
        yolo = {"kiln": {"mode": "yolo"}}
        new = await call(2, "session/new", {"cwd": str(workspace), "mcpServers": [], "_meta": yolo})
        prompt = {
            "sessionId": new["result"]["sessionId"],
            "prompt": [{"type": "text", "text": "go"}],
        }
        answer = await call(3, "session/prompt", prompt)
        assert answer["result"] == {"stopReason": "end_turn"}, answer
    finally:
        proc.stdin.close()
        stderr = await asyncio.wait_for(proc.stderr.read(), 60)
        await asyncio.wait_for(proc.wait(), 60)
    assert asked == [], asked
    assert (workspace / "new.txt").read_text() == "from the agent\n"
    assert b"Traceback" not in stderr, stderr.decode(errors="replace")
