"""The skill tools inside a real session driven by the scripted model."""

from __future__ import annotations

import shutil
from pathlib import Path

from agent.events import Event
from agent.providers.scripted import ScriptedModel
from agent.session import AgentConfig, DiskHost, Session

from .conftest import FIXTURES


def call(tool: str, **args: object) -> dict:
    return {"tool_calls": [{"name": tool, "input": args}]}


async def test_catalog_skill_search_and_deferred_call(tmp_path: Path) -> None:
    skills = tmp_path / ".kiln" / "skills"
    shutil.copytree(FIXTURES / "sidecar" / "toolbox", skills / "toolbox")
    shutil.copytree(FIXTURES / "anthropic" / "brand-guidelines", skills / "brand-guidelines")
    script = [
        call("skill", name="brand-guidelines"),
        call("tool_search", query="echo text back"),
        call("toolbox__echo", text="ping"),
        "Done.",
    ]
    events: list[Event] = []
    session = Session.create(
        tmp_path,
        host=DiskHost(events.append),
        config=AgentConfig(mode="yolo"),
        model=ScriptedModel(script),
    )
    assert "toolbox" not in session.runner.tools["tool_search"].spec.description  # fixed definition
    assert not any(
        name.startswith("toolbox__") for name in session.runner.tools
    )  # not in the prefix

    assert await session.prompt("Make the landing page on-brand, then echo ping.") == "end_turn"

    first_user = session.transcript.messages[0]["content"]
    catalog = [
        b["text"]
        for b in first_user
        if b.get("type") == "text" and b["text"].startswith("<skills>")
    ]
    assert (
        len(catalog) == 1 and "- brand-guidelines: Applies Anthropic's official brand" in catalog[0]
    )
    results = [
        b
        for m in session.transcript.messages
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    texts = [r["content"] if isinstance(r["content"], str) else str(r["content"]) for r in results]
    assert '<skill name="brand-guidelines" path=".kiln/skills/brand-guidelines">' in texts[0]
    assert "LICENSE.txt" in texts[0]
    assert "- name: toolbox__echo" in texts[1] and '"required": ["text"]' in texts[1]
    assert {"type": "tool_reference", "tool_name": "toolbox__echo"} in results[1]["content"]
    deferred_block = [b["text"] for b in first_user if "<deferred_tools>" in b.get("text", "")]
    assert len(deferred_block) == 1 and "tools from 1 skill(s)" in deferred_block[0]
    assert '{"echo": {"text": "ping"}}' in texts[2] and not results[2].get("is_error")
    # announced once, then kept in place for later requests
    assert "toolbox__echo" in session.runner.deferred
    # the catalog is not re-sent when nothing changed
    later = [
        b for m in session.transcript.messages[1:] for b in m["content"] if b.get("type") == "text"
    ]
    assert not any(b["text"].startswith("<skills>") for b in later)
