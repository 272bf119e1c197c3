"""A session resumed turn by turn (`kiln run --resume`, a new process each time) sends the
same bytes as one an editor keeps open (`kiln acp`), but for the complete status block each
resumed process appends at its first request (README, status bar). Same script, same files,
the real anthropic SDK against the wire server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent.testing.wire_server import WireServer
from tests.acp.conftest import EditorClient
from tests.context.wire_runs import KilnRuns, breaks

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TASKS = ["read it", "list them", "find defs"]
STATUS = re.compile(r"<agent_status( mode=\"delta\")?>\n.*?</agent_status>", re.S)


def _script() -> list[Any]:
    def call(name: str, **args: Any) -> dict[str, Any]:
        return {"tool_calls": [{"name": name, "input": args}]}

    return [call("read_file", path="app.py"), "one", call("list_files"), "two",
            call("grep", pattern="def"), "three"]  # fmt: skip


def _without_status(raw: bytes) -> list[Any]:
    """The messages as sent, markers and status blocks left out (an emptied block too)."""
    body = json.loads(raw)
    out = []
    for message in body["messages"]:
        content = [
            {k: v for k, v in b.items() if k != "cache_control"}
            for b in message["content"]
            if not (b.get("type") == "text" and STATUS.fullmatch(b.get("text", "")))
        ]
        out.append({**message, "content": content})
    return [body["system"][0]["text"], body["tools"], out]


async def test_resumed_turns_send_what_an_open_session_sends(
    spawn: Any, workspace: Path, tmp_path: Path
) -> None:
    with WireServer(_script()) as wire:
        env = {"KILN_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": wire.url,
               "ANTHROPIC_API_KEY": "k", "KILN_ACP_MODE": "yolo"}  # fmt: skip
        async with spawn([], EditorClient(), **env) as agent:
            await agent.start(fs=False)
            sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
            for task in TASKS:
                await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": task}])
        kept_open = [r.raw for r in wire.requests if r.method == "POST"]
    with WireServer(_script()) as wire:
        runs = KilnRuns(tmp_path / "resumed", wire)
        for task in TASKS:
            runs.turn(workspace, task)
        resumed = runs.raws()
    assert breaks(kept_open) == [] and breaks(resumed) == []
    assert len(resumed) == len(kept_open) == 2 * len(TASKS)
    for open_raw, resumed_raw in zip(kept_open, resumed, strict=True):
        assert _without_status(resumed_raw) == _without_status(open_raw)
    # ... and what differs is one complete status block at each resumed process's first request
    last = json.loads(resumed[-1])["messages"]
    firsts = [m for m in last if m["role"] == "user" and any(
        b.get("text") in TASKS for b in m["content"])]  # fmt: skip
    assert all(b["text"].startswith("<agent_status>\ncwd:") for m in firsts[1:]
               for b in m["content"][:1])  # fmt: skip
