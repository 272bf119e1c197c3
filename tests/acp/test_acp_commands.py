"""Slash commands over ACP: `kiln acp` offers the session's skills (``available_commands_update``)
and a prompt starting with ``/NAME`` loads that skill, driven by the Python ACP SDK's client,
which parses every update with the SDK's schema models."""

from __future__ import annotations

import re
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
        [offered] = _offered(client)
        assert offered[-1] == {"name": "deploy", "description": "Ship the app.", "input": hint}
        assert [c["name"] for c in offered] == ["compact", "context", "model", "deploy"]

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
        assert [c["name"] for c in _offered(client)[-1]][-2:] == ["deploy", "lint"]

        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
        await client.wait_for(lambda u: len(_offered(client)) == 3)  # a load starts over


def _reply(client: EditorClient, since: int) -> str:
    return "".join(
        u["content"]["text"]
        for u in client.updates[since:]
        if u["sessionUpdate"] == "agent_message_chunk"
    )


async def test_builtin_commands_answer_without_the_model(spawn, workspace: Path) -> None:
    """`/compact`, `/context` and `/model` were not offered and reached the model as text: a
    session without skills got no `/` menu at all. Now they are offered and answered by Kiln."""
    client = EditorClient()
    read = {"tool_calls": [{"name": "read_file", "input": {"path": "app.py"}}]}
    script = [read, read, "Read it twice.", "Two.", "Three.", "Four."]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        await client.wait_for(lambda u: u["sessionUpdate"] == "available_commands_update")
        [offered] = _offered(client)
        assert [(c["name"], "input" in c) for c in offered] == [
            ("compact", False), ("context", False), ("model", True),
        ]  # fmt: skip
        assert all(c["description"] for c in offered)

        async def ask(text: str) -> str:
            since = len(client.updates)
            prompt = [{"type": "text", "text": text}]
            assert (await agent.conn.prompt(session_id=sid, prompt=prompt)).stop_reason == (
                "end_turn"
            )
            return _reply(client, since)

        assert await ask("/compact") == "Nothing to compact yet."
        assert "Nothing has been sent to the model yet." in await ask("/context")
        assert await ask("read app.py twice") == "Read it twice."
        context = await ask("/context")
        assert context.startswith("Context: 6 messages, 1 turn, 3 steps; window 200,000 tokens.")
        assert "- system: " in context and "Last request (step 3)" in context
        listed = await ask("/model")
        assert listed.startswith("Model: `scripted` (scripted).")
        assert "`/model NAME` switches" in listed
        for text in ("two", "three", "four"):
            await ask(text)
        compacted = await ask("/compact")  # the first read is superseded by the second
        assert re.fullmatch(r"Compacted the conversation: [\d,]+ → [\d,]+ tokens\.", compacted)
        assert await ask("/compact") == "Nothing to compact yet."
        assert len(_offered(client)) == 1  # the list did not change
