"""README's list of built-in tools is the list a real session sends, in order, with the same
arguments (a doc sentence the code does not hold is a defect)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from agent.providers.scripted import ScriptedModel
from agent.session import AgentConfig, DiskHost, Session

README = Path(__file__).resolve().parents[2] / "README.md"


def documented() -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index("- **Built-in tools**")
    bullet = text[start : text.index("\n- ", start + 1)]
    return [f"{name}{{{args}}}" for name, args in re.findall(r"`(\w+)\{([^}]*)\}`", bullet)]


def test_readme_lists_every_tool_a_session_sends(tmp_path: Path) -> None:
    model = ScriptedModel(["done"])
    session = Session.create(tmp_path, host=DiskHost(), config=AgentConfig(), model=model)
    asyncio.run(session.prompt("hi"))
    sent = []
    for tool in model.requests[0].tools:
        schema = tool.input_schema
        required = schema.get("required", [])
        args = ", ".join(p + ("" if p in required else "?") for p in schema["properties"])
        sent.append(f"{tool.name}{{{args}}}")
    assert "call_tool{name, arguments?}" in sent
    assert documented() == sent
