"""The editors' session list and a load's replay show what a session stored from its task
redacted, as `kiln sessions list|show` print it (docs/security.md 7a): `kiln/session/list` sent
a title of the task as typed, key and all, to a picker anyone at the screen reads, and
`kiln/session/load` replayed the task and the answers as stored. Real `kiln lsp`, the scripted
model; the same keys as `tests/cli/test_sessions_redaction.py`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_sessions_redaction import ANTHROPIC, AWS, GITHUB, SERVICE, assert_no_secret
from tests.lsp.conftest import running

pytestmark = pytest.mark.e2e

TASK = f"svc {SERVICE} aws {AWS} deploy with {ANTHROPIC}"  # its title ends inside the key
TYPED = "svc [REDACTED:MY_SERVICE_TOKEN] aws [REDACTED] deploy with [REDACTED]"
ANSWER = f"Pushed with {GITHUB}; the key {SERVICE} works."


async def test_list_and_replay_redact_the_task_and_the_answer(
    workspace: Path, scripted_env: Callable[[list[Any]], dict[str, str]]
) -> None:
    env = {**scripted_env([ANSWER]), "MY_SERVICE_TOKEN": SERVICE}
    async with running(workspace, env) as editor:
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        prompt = [{"type": "text", "text": TASK}]
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": prompt})
        listed = (await editor.request("kiln/session/list", {}))["sessions"]
    assert [s["title"] for s in listed] == [TYPED]
    async with running(workspace, env) as editor:  # another process: loaded from the store
        await editor.request("kiln/session/load", {"sessionId": sid, "replay": True})
        replayed = editor.updates_for(sid)
    said = {u["sessionUpdate"]: u["content"]["text"] for u in replayed if "content" in u}
    assert said["user_message_chunk"].endswith(TYPED)
    assert said["agent_message_chunk"] == (
        "Pushed with [REDACTED]; the key [REDACTED:MY_SERVICE_TOKEN] works."
    )
    assert_no_secret(json.dumps([listed, replayed]))


async def test_context_show_redacts_the_todo_list_and_the_refusals(
    workspace: Path, scripted_env: Callable[[list[Any]], dict[str, str]]
) -> None:
    """`kiln/context/show` returned the todo list as the model wrote it, a key it copied from
    the task included, and the arguments of a refused call as well, while a load's replay of
    the same plan and call was redacted."""
    items = [
        {"id": "1", "content": f"push with {GITHUB}", "status": "in_progress"},
        {
            "id": "2",
            "content": f"call the api with {ANTHROPIC}, svc {SERVICE}",
            "status": "pending",
        },
    ]
    curl = f"curl -H 'x-api-key: {ANTHROPIC}' https://example.com/{SERVICE}"
    steps = [
        {"tool_calls": [{"name": "todo_write", "input": {"items": items}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": curl}}]},
        "planned",
    ]
    env = {**scripted_env(steps), "MY_SERVICE_TOKEN": SERVICE}
    async with running(workspace, env) as editor:
        sid = (await editor.request("kiln/session/new", {"mode": "ci"}))["sessionId"]
        prompt = [{"type": "text", "text": "plan the release"}]
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": prompt})
        shown = await editor.request("kiln/context/show", {"sessionId": sid})
    assert [(t["id"], t["content"], t["status"]) for t in shown["todos"]] == [
        ("1", "push with [REDACTED]", "in_progress"),
        ("2", "call the api with [REDACTED], svc [REDACTED:MY_SERVICE_TOKEN]", "pending"),
    ]
    [refused] = shown["refusals"]
    assert refused["tool"] == "run_command", refused
    assert refused["arguments"]["command"] == (
        "curl -H 'x-api-key: [REDACTED]' https://example.com/[REDACTED:MY_SERVICE_TOKEN]"
    )
    assert_no_secret(json.dumps(shown))
