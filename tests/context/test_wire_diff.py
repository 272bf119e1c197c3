"""`kiln context diff` measures the requests as sent: the wire bodies each step recorded
(tools, system, messages in the provider's format), compared block by block."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent.providers.anthropic import AnthropicModel
from agent.session import AgentConfig, DiskHost, Session
from agent.testing.wire_server import WireServer
from agent.wire_log import WireLog
from tests.context.conftest import call

ROOT = Path(__file__).resolve().parents[2]


def diff_json(session_id: str, step: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "context", "diff", session_id, "--step", str(step),
         "--json"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


async def test_diff_names_the_first_block_that_changed_on_the_wire(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    script = [call("read_file", path="a.py"), "first done", "second done"]
    with WireServer(script) as srv:
        model = AnthropicModel(base_url=srv.anthropic_base_url, api_key="k")
        session = Session.create(
            root, host=DiskHost(), config=AgentConfig(mode="yolo"), model=model
        )
        try:
            assert await session.prompt("read a.py") == "end_turn"
            # a skill declaring a tool appears between turns: on Anthropic the tool is declared
            # (deferred) from the next request on, which changes the bytes sent
            tools = root / ".kiln" / "skills" / "db" / "tools"
            tools.mkdir(parents=True)
            (tools.parent / "SKILL.md").write_text("---\nname: db\ndescription: DB.\n---\nx\n")
            (tools / "run.py").write_text("print(1)\n")
            (tools / "plan.json").write_text(
                '{"name": "plan", "description": "Plan.", "command": "tools/run.py"}'
            )
            assert await session.prompt("again") == "end_turn"
        finally:
            await session.aclose()
        sent = srv.bodies("/v1/messages")
    wire = WireLog(session.store.folder(session.id)).requests()
    assert sorted(wire) == [1, 2, 3] and len(sent) == 3
    # the log holds what the SDK put on the wire, block for block
    assert [label for label, _ in wire[3].blocks][-1].startswith("message 4 (user) block")
    assert any(label == "tool db__plan (defer_loading)" for label, _ in wire[3].blocks)

    inside = diff_json(session.id, 2)  # within a turn: append-only, measured
    assert inside["measured"] and inside["diverges_at"] == ""
    assert inside["cause"].startswith("append-only")

    across = diff_json(session.id, 3)
    assert across["measured"]
    assert across["diverges_at"] == "tool db__plan (defer_loading) (previously system)"
    assert across["cause"] == "the tool list changed: added ['db__plan (defer_loading)']"
    assert across["share"] < 0.9  # everything after the tools differs in position


def test_blocks_are_stored_once(tmp_path: Path) -> None:
    log = WireLog(tmp_path)
    body = {
        "system": "s",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}],
    }
    log.record(1, body)
    body["messages"].append({"role": "assistant", "content": "b"})
    log.record(2, body)
    lines = (tmp_path / "wire" / "blocks.jsonl").read_text().splitlines()
    assert len(lines) == 4  # system, envelope, text block, the new message: no repeats
    requests = log.requests()
    assert requests[2].text().startswith(requests[1].text())
