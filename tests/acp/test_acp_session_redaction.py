"""`session/list` titles and a `session/load` replay are redacted as `kiln sessions list|show`
print them (docs/security.md 7a): a key typed into a prompt was listed as the session's title,
and replayed, as typed. Real `kiln acp`, the scripted model; the keys of
`tests/cli/test_sessions_redaction.py`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.acp.conftest import EditorClient
from tests.cli.test_sessions_redaction import ANTHROPIC, AWS, GITHUB, SERVICE, assert_no_secret

pytestmark = pytest.mark.e2e

TASK = f"svc {SERVICE} aws {AWS} deploy with {ANTHROPIC}"  # its title ends inside the key
TYPED = "svc [REDACTED:MY_SERVICE_TOKEN] aws [REDACTED] deploy with [REDACTED]"
ANSWER = f"Pushed with {GITHUB}; the key {SERVICE} works."


async def test_list_and_load_redact_the_task_and_the_answer(spawn, workspace: Path) -> None:
    async with spawn([ANSWER], EditorClient(), MY_SERVICE_TOKEN=SERVICE) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": TASK}])
        (listed,) = (await agent.conn.list_sessions(cwd=str(workspace))).sessions
    assert listed.title == TYPED
    client = EditorClient()
    async with spawn([], client, MY_SERVICE_TOKEN=SERVICE) as agent:  # loaded from the store
        await agent.start()
        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
    assert client.text("user_message_chunk").endswith(TYPED)
    assert client.text() == "Pushed with [REDACTED]; the key [REDACTED:MY_SERVICE_TOKEN] works."
    assert_no_secret(json.dumps([listed.model_dump(mode="json"), client.updates]))
