"""What a client sends right behind `session/cancel` (raw JSON-RPC against a real `kiln acp`).

A client whose user presses Stop and asks again at once (Zed's "send while the agent runs")
writes `session/cancel` and the next `session/prompt` together. The cancelled turn still has to
unwind, so the new prompt was refused with -31002 ("a turn is already running"), and the
question was lost. And a user who clicks Allow as Stop is pressed sends the permission answer
after the cancel: that answer must not apply the edit of a turn the user stopped.
"""

from __future__ import annotations

import asyncio
import json
import os
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import KILN_ACP

pytestmark = pytest.mark.e2e


@dataclass
class Wire:
    """A raw client: writes frames (several in one write when asked), reads every line."""

    proc: asyncio.subprocess.Process
    seen: list[dict[str, Any]] = field(default_factory=list)

    def send(self, *messages: dict[str, Any]) -> None:
        data = "".join(json.dumps({"jsonrpc": "2.0", **m}) + "\n" for m in messages)
        assert self.proc.stdin is not None
        self.proc.stdin.write(data.encode())  # one write: the server reads them back to back

    async def until(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while not (hit := next((m for m in self.seen if predicate(m)), None)):
            try:
                line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
            except TimeoutError:
                raise AssertionError(f"no such message; got {self.seen}") from None
            assert line, self.seen
            self.seen.append(json.loads(line))
        return hit

    async def answer(self, request_id: int) -> dict[str, Any]:
        return await self.until(lambda m: m.get("id") == request_id and "method" not in m)

    async def new_session(self, cwd: Path) -> str:
        self.send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        self.send({"id": 2, "method": "session/new", "params": {"cwd": str(cwd), "mcpServers": []}})
        return str((await self.answer(2))["result"]["sessionId"])


@asynccontextmanager
async def kiln_acp(kiln_home: Path, script: list[Any], tmp_path: Path) -> AsyncIterator[Wire]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    env = {"KILN_HOME": str(kiln_home), "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(path),
           "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "PATH": os.environ["PATH"], "KILN_LOG_LEVEL": os.environ.get("KILN_LOG_LEVEL", "WARNING")}  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *KILN_ACP, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=env
    )
    wire = Wire(proc)
    try:
        yield wire
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 60)


def prompt(request_id: int, session_id: str, text: str) -> dict[str, Any]:
    return {
        "id": request_id,
        "method": "session/prompt",
        "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
    }


def cancel(session_id: str) -> dict[str, Any]:
    return {"method": "session/cancel", "params": {"sessionId": session_id}}


def running(never: Path) -> list[Any]:
    """A turn that shows its plan, then waits on the model until ``never`` exists."""
    todo = {"name": "todo_write",
            "input": {"items": [{"id": "1", "content": "look", "status": "in_progress"}]}}  # fmt: skip
    return [{"text": "", "tool_calls": [todo]}, {"wait_for": str(never)}]


def is_plan(message: dict[str, Any]) -> bool:
    update = message.get("params", {}).get("update", {})
    return message.get("method") == "session/update" and update.get("sessionUpdate") == "plan"


def said(wire: Wire) -> str:
    return "".join(
        m["params"]["update"]["content"].get("text", "")
        for m in wire.seen
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


async def test_a_prompt_right_behind_a_cancel_runs_once_the_cancelled_turn_ends(
    kiln_home: Path, tmp_path: Path, workspace: Path
) -> None:
    never = tmp_path / "never"
    todo, wait = running(never)  # the answer's step comes first, taken only by its question
    script = [todo, {"text": "the second answer", "match": "zebra"}, wait]
    async with kiln_acp(kiln_home, script, tmp_path) as wire:
        sid = await wire.new_session(workspace)
        wire.send(prompt(3, sid, "first"))
        await wire.until(is_plan)  # the turn is running
        wire.send(cancel(sid), prompt(4, sid, "zebra question"), prompt(5, sid, "third"))
        first, second = await wire.answer(3), await wire.answer(4)
        third = await wire.answer(5)  # one prompt waits behind a cancel; another is refused
    assert third["error"]["code"] == -31002, third
    assert first["result"]["stopReason"] == "cancelled", first
    assert second.get("result", {}).get("stopReason") == "end_turn", second
    assert "the second answer" in said(wire)
    answered = wire.seen.index(first)
    after = [m for m in wire.seen[answered:] if m.get("method") == "session/update"]
    assert any("the second answer" in json.dumps(m) for m in after), wire.seen[answered:]
    assert not any("the second answer" in json.dumps(m) for m in wire.seen[:answered])


async def test_a_load_right_behind_a_cancel_replays_the_stopped_turn(
    kiln_home: Path, tmp_path: Path, workspace: Path
) -> None:
    """`session/load` behind the cancel (the editor reopening the thread) got -31002 too."""
    never = tmp_path / "never"
    todo, wait = running(never)  # the next answer's step first, taken only by its question
    async with kiln_acp(
        kiln_home, [todo, {"text": "after", "match": "zebra"}, wait], tmp_path
    ) as wire:
        sid = await wire.new_session(workspace)
        wire.send(prompt(3, sid, "first"))
        await wire.until(is_plan)
        load = {"sessionId": sid, "cwd": str(workspace), "mcpServers": []}
        wire.send(cancel(sid), {"id": 4, "method": "session/load", "params": load})
        assert (await wire.answer(3))["result"]["stopReason"] == "cancelled"
        loaded = await wire.answer(4)
        assert "result" in loaded, loaded
        wire.send(prompt(5, sid, "zebra again"))
        assert (await wire.answer(5))["result"]["stopReason"] == "end_turn"


async def test_a_cancel_as_the_turn_ends_still_gets_the_prompt_answered(
    kiln_home: Path, tmp_path: Path, workspace: Path
) -> None:
    """The cancel cut short the update being sent as it came (the turn awaited it), and the
    prompt's last flush met that cut send: the prompt never answered, the client hung."""
    for _ in range(3):  # the cancel lands at a different point of the turn's end each time
        todo, _wait = running(tmp_path / "never")
        async with kiln_acp(kiln_home, [todo, "done"], tmp_path) as wire:
            sid = await wire.new_session(workspace)
            wire.send(prompt(3, sid, "first"))
            await wire.until(is_plan)
            wire.send(cancel(sid))
            assert (await wire.answer(3))["result"]["stopReason"] in ("cancelled", "end_turn")
            final = await wire.until(
                lambda m: (
                    m.get("method") == "session/update"
                    and m["params"]["update"].get("status") in ("completed", "failed")
                )
            )
            assert final["params"]["update"]["toolCallId"] == "call_1"


async def test_a_second_prompt_without_a_cancel_is_still_refused(
    kiln_home: Path, tmp_path: Path, workspace: Path
) -> None:
    never = tmp_path / "never"
    async with kiln_acp(kiln_home, [*running(never), "done"], tmp_path) as wire:
        sid = await wire.new_session(workspace)
        wire.send(prompt(3, sid, "first"))
        await wire.until(is_plan)
        wire.send(prompt(4, sid, "second"))
        refused = await wire.answer(4)
        assert refused["error"]["code"] == -31002, refused
        load = {"sessionId": sid, "cwd": str(workspace), "mcpServers": []}
        wire.send({"id": 5, "method": "session/load", "params": load})  # docs/acp.md: -31002
        refused = await wire.answer(5)
        assert refused["error"]["code"] == -31002, refused
        never.write_text("")
        assert (await wire.answer(3))["result"]["stopReason"] == "end_turn"


async def test_a_permission_answer_sent_after_the_cancel_is_inert(
    kiln_home: Path, tmp_path: Path, workspace: Path
) -> None:
    target = workspace / "notes.txt"
    target.write_text("before\n", encoding="utf-8")
    edit = {"name": "edit_file",
            "input": {"path": "notes.txt", "old_text": "before", "new_text": "after"}}  # fmt: skip
    async with kiln_acp(
        kiln_home, [{"text": "", "tool_calls": [edit]}, "edited"], tmp_path
    ) as wire:
        sid = await wire.new_session(workspace)
        wire.send(prompt(3, sid, "edit it"))
        asked = await wire.until(lambda m: m.get("method") == "session/request_permission")
        allow = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        wire.send(cancel(sid), {"id": asked["id"], "result": allow})
        done = await wire.answer(3)
    assert done["result"]["stopReason"] == "cancelled", done
    assert target.read_text(encoding="utf-8") == "before\n"
    assert "edited" not in said(wire)
