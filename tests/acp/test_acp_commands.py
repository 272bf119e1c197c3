"""Slash commands over ACP: `kiln acp` offers the session's skills (``available_commands_update``)
and a prompt starting with ``/NAME`` loads that skill, driven by the Python ACP SDK's client,
which parses every update with the SDK's schema models."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acp.conftest import EditorClient
from tests.registry.conftest import make_skill

pytestmark = pytest.mark.e2e


def _offered(client: EditorClient) -> list[list[dict[str, object]]]:
    return [
        u["availableCommands"]
        for u in client.updates
        if u["sessionUpdate"] == "available_commands_update"
    ]


async def test_skills_are_offered_as_slash_commands_and_load_when_used(
    spawn, workspace: Path, kiln_home: Path
) -> None:
    """Kiln's skills were only reachable by the model's own `skill` call: an ACP client's `/`
    menu was empty and `/deploy …` reached the model as plain text."""
    make_skill(kiln_home / "skills", "deploy", "Ship the app.", body="USER-DEPLOY-STEPS\n")
    client = EditorClient()
    script = [
        {"match": "re:USER-DEPLOY-STEPS[\\s\\S]*to staging", "text": "Deploying."},
        {"match": "/nothere as typed", "text": "Plain text."},
        "Two skills now.",
    ]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        await client.wait_for(lambda u: u["sessionUpdate"] == "available_commands_update")
        hint = {"hint": "what to do with it"}
        assert _offered(client) == [
            [{"name": "deploy", "description": "Ship the app.", "input": hint}]
        ]

        text = [{"type": "text", "text": "/deploy to staging"}]
        assert (await agent.conn.prompt(session_id=sid, prompt=text)).stop_reason == "end_turn"
        assert client.text() == "Deploying."

        text = [{"type": "text", "text": "/nothere as typed"}]  # no such skill: the text as is
        assert (await agent.conn.prompt(session_id=sid, prompt=text)).stop_reason == "end_turn"
        assert client.text() == "Deploying.Plain text."
        assert len(_offered(client)) == 1  # an unchanged list is not sent again

        make_skill(workspace / ".kiln" / "skills", "lint", "Run the linters.")
        text = [{"type": "text", "text": "install done"}]
        assert (await agent.conn.prompt(session_id=sid, prompt=text)).stop_reason == "end_turn"
        assert [c["name"] for c in _offered(client)[-1]] == ["deploy", "lint"]

        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
        await client.wait_for(lambda u: len(_offered(client)) == 3)  # a load starts over
