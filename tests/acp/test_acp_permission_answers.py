"""Answers to `session/request_permission` that are not a choice of the user (docs/acp.md): an
error response, a malformed result or an option that was not offered refuses the action and
says the request failed, never "the user declined"."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e

RUN = {"text": "", "tool_calls": [{"name": "run_command", "input": {"command": "echo hi"}}]}


class ErrorAnswers(EditorClient):
    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **kw: Any
    ) -> Any:
        await super().request_permission(session_id, tool_call, options, **kw)
        raise RequestError(-32603, "the dialog crashed")


class MalformedAnswers(EditorClient):
    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **kw: Any
    ) -> Any:
        await super().request_permission(session_id, tool_call, options, **kw)
        return {"outcome": {"optionId": "allow_once"}}  # no "outcome" kind: not ACP


@dataclass
class UnofferedAnswers(EditorClient):
    """Picks an option id Kiln never offered (a client mixing up its own ids)."""

    answer: str = "approve"


@pytest.mark.parametrize(
    ("editor", "said"),
    [
        (ErrorAnswers, "the client answered error -32603: the dialog crashed"),
        (MalformedAnswers, "the client's answer is not a permission response (outcome"),
        (UnofferedAnswers, "the client chose 'approve', which is not one of the options offered"),
    ],
)
async def test_a_failed_permission_request_is_not_the_users_no(
    spawn, workspace: Path, editor: type[EditorClient], said: str
) -> None:
    """An error answer was reported as "the user declined"; a malformed one as a multi-line
    pydantic dump. Both now read "the permission request failed: <one line>"."""
    client = editor()
    async with spawn([RUN, "refused, as it should be"], client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
        assert result.stop_reason == "end_turn"
    assert len(client.permissions) == 1
    thoughts = client.text("agent_thought_chunk")
    (refusal,) = [line for line in thoughts.splitlines() if line.startswith("Not allowed")]
    assert refusal.startswith(f"Not allowed: run_command: the permission request failed: {said}")
    assert "declined" not in thoughts and "pydantic" not in thoughts, thoughts
    statuses = [
        u.get("status") for u in client.updates if u["sessionUpdate"].startswith("tool_call")
    ]
    assert statuses[-1] == "failed" and "completed" not in statuses
