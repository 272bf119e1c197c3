"""A client's ``_meta`` is metadata, never a parameter (docs/acp.md, "_meta"), through the real
`kiln acp` over raw frames: the Python ACP SDK merges ``_meta`` keys into a handler's keyword
arguments over the validated parameters, so ``{"modeId": "ask", "_meta": {"mode_id": "yolo"}}``
switched a session to yolo, ``_meta.session_id`` retargeted a request to another session,
``_meta.cwd`` moved a session, and ``_meta.self`` crashed the handler."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from tests.acp.conftest import KILN_ACP

pytestmark = pytest.mark.e2e


class RawAcp:
    """`kiln acp` driven frame by frame: ``await call(method, params)`` -> the raw answer."""

    def __init__(self, kiln_home: Path, **env: str) -> None:
        self.env = {
            "KILN_HOME": str(kiln_home),
            "KILN_PROVIDER": "scripted",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            **env,
        }
        self.ids = 0
        self.notes: list[dict[str, Any]] = []
        self.proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> RawAcp:
        self.proc = await asyncio.create_subprocess_exec(
            *KILN_ACP,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            limit=2**24,
        )
        return self

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        self.ids += 1
        frame = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(frame) + "\n").encode())
        await self.proc.stdin.drain()
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
            assert line, "kiln acp closed its output"
            message = json.loads(line)
            if message.get("id") == self.ids and "method" not in message:
                return message
            self.notes.append(message)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self.proc is not None and self.proc.stdin and self.proc.stderr
        self.proc.stdin.close()
        stderr = await asyncio.wait_for(self.proc.stderr.read(), 60)
        assert await self.proc.wait() == 0
        assert b"Traceback" not in stderr, stderr.decode(errors="replace")


async def test_meta_keys_cannot_stand_in_for_parameters(
    workspace: Path, kiln_home: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    script = tmp_path / "script.json"
    script.write_text("[]")
    async with RawAcp(kiln_home, KILN_SCRIPT=str(script)) as acp:
        init = await acp.call("initialize", {"protocolVersion": 1, "_meta": {"self": 1}})
        assert init["result"]["agentInfo"]["name"] == "kiln"
        hostile = {"cwd": str(other), "self": 1, "mcp_servers": [{"name": "x"}], "kwargs": 2,
                   "additional_directories": "/"}  # fmt: skip
        new = await acp.call(
            "session/new", {"cwd": str(workspace), "mcpServers": [], "_meta": hostile}
        )
        victim = new["result"]["sessionId"]  # created, where the parameter said
        other_new = await acp.call("session/new", {"cwd": str(workspace), "mcpServers": []})
        mine = other_new["result"]["sessionId"]
        # Switching my session to ask must not switch another session to yolo.
        switched = await acp.call(
            "session/set_mode",
            {"sessionId": mine, "modeId": "ask",
             "_meta": {"session_id": victim, "mode_id": "yolo", "self": 1}},
        )  # fmt: skip
        assert "result" in switched, switched
        listed = await acp.call("session/list", {"_meta": {"cwd": str(other)}})
        sessions = {s["sessionId"]: s for s in listed["result"]["sessions"]}
        assert set(sessions) == {victim, mine}
        assert {s["cwd"] for s in sessions.values()} == {str(workspace)}
        assert {s["_meta"]["kiln"]["mode"] for s in sessions.values()} == {"ask"}
        # The documented use of _meta still holds: Kiln options under _meta.kiln.
        tuned = await acp.call(
            "session/new",
            {"cwd": str(workspace), "mcpServers": [], "_meta": {"kiln": {"mode": "auto-edit"}}},
        )
        assert tuned["result"]["modes"]["currentModeId"] == "auto-edit"


async def test_a_prompt_meta_cannot_retarget_or_skip_validation(
    workspace: Path, kiln_home: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["Answered in my session."]))
    async with RawAcp(kiln_home, KILN_SCRIPT=str(script)) as acp:
        await acp.call("initialize", {"protocolVersion": 1})
        victim = await acp.call("session/new", {"cwd": str(workspace), "mcpServers": []})
        mine = await acp.call("session/new", {"cwd": str(workspace), "mcpServers": []})
        victim_id, mine_id = victim["result"]["sessionId"], mine["result"]["sessionId"]
        params = {
            "sessionId": mine_id,
            "prompt": [{"type": "text", "text": "hello"}],
            "_meta": {"session_id": victim_id, "prompt": "not a list of blocks"},
        }
        answer = await acp.call("session/prompt", params)
        assert answer["result"]["stopReason"] == "end_turn", answer
    updated = {
        n["params"]["sessionId"]
        for n in acp.notes
        if n.get("method") == "session/update"
        and n["params"]["update"]["sessionUpdate"] != "available_commands_update"  # each session's
    }
    assert updated == {mine_id}, updated
