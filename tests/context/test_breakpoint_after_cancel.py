"""Anthropic breakpoints after a turn was cancelled during a fan-out of tool calls: the next
request adds the unanswered calls, their "not run" results and the next prompt after the last
request's end. The API looks back at most 20 blocks from a breakpoint for an earlier cache
entry, so a breakpoint must also mark where that request ended, or the whole conversation is
read and written again. Real SDK, real cancel, the bytes on the wire."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent.providers.anthropic import LOOKBACK_BLOCKS, AnthropicModel
from agent.session import AgentConfig, DiskHost, Session
from agent.testing.wire_server import WireServer
from tests.context.wire_runs import breaks


def marks(body: dict[str, Any]) -> list[tuple[int, int]]:
    return [(i, j) for i, m in enumerate(body["messages"]) for j, b in enumerate(m["content"])
            if isinstance(b, dict) and "cache_control" in b]  # fmt: skip


async def test_a_cancelled_fan_out_keeps_the_previous_entry_in_reach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KILN_HOME", str(tmp_path / "home"))
    root = tmp_path / "ws"
    root.mkdir()
    started = root / "started"  # inside the workspace: commands run sandboxed
    fan_out = {"tool_calls": [{"name": "run_command",
                               "input": {"command": "touch started; sleep 30"}}] * 12}  # fmt: skip
    with WireServer(["hello", fan_out, "after the cancel"]) as server:
        session = Session.create(
            root, host=DiskHost(), config=AgentConfig(mode="yolo"),
            model=AnthropicModel(base_url=server.url, api_key="k"),
        )  # fmt: skip
        try:
            assert await session.prompt("say hello") == "end_turn"
            turn = asyncio.ensure_future(session.prompt("run them all"))

            async def command_running() -> None:
                while not started.exists():
                    await asyncio.sleep(0.02)

            await asyncio.wait_for(command_running(), 60)  # a command runs: cancel the turn now
            session.cancel()
            assert await turn == "cancelled"
            assert await session.prompt("what happened?") == "end_turn"
        finally:
            await session.aclose()
        bodies = server.bodies("/v1/messages")
        raws = [r.raw for r in server.requests if r.method == "POST"]
    assert len(bodies) == 3 and breaks(raws) == []
    previous_end = len(bodies[1]["messages"]) - 1  # where the fan-out request ended
    added = sum(len(m["content"]) for m in bodies[2]["messages"][previous_end + 1 :])
    assert added > LOOKBACK_BLOCKS
    last = len(bodies[2]["messages"]) - 1
    assert marks(bodies[2]) == [
        (previous_end, len(bodies[2]["messages"][previous_end]["content"]) - 1),
        (last, len(bodies[2]["messages"][last]["content"]) - 1),
    ]
