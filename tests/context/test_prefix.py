"""The frozen prefix: no dynamic value (cwd, time, environment, OS, memory, skills) ever lands in
the system prompt or the tool definitions; they all go to the tail of the trajectory."""

from __future__ import annotations

import asyncio
import os
import platform
import tempfile
import time
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.providers.anthropic import build_params
from agent.providers.scripted import ScriptedModel
from agent.session import AgentConfig, DiskHost, Session
from agent.types import canonical_json

WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=3, max_size=12)
SKILL = st.from_regex(r"[a-z]{3,10}(-[a-z]{2,6})?", fullmatch=True)


def frozen_bytes(root: Path) -> tuple[str, str]:
    """(prefix as the session records it, system+tools as the Anthropic provider sends them)."""
    session = Session.create(
        root, host=DiskHost(), config=AgentConfig(mode="ask"), model=ScriptedModel(["ok"])
    )
    asyncio.run(session.prompt("hello"))
    request = session.model.requests[0]
    params = build_params(request, "claude-test")
    tail = canonical_json(request.messages)
    return canonical_json(session.context.prefix()), canonical_json(
        [params["system"], params["tools"]]
    ) + "\0" + tail


def make_root(base: Path, folder: str, memory: str, skills: list[str]) -> Path:
    root = base / folder
    root.mkdir(parents=True)
    if memory:
        (root / "KILN.md").write_text(f"# Project notes\n{memory}\n")
    for name in skills:
        skill = root / ".kiln" / "skills" / name
        skill.mkdir(parents=True, exist_ok=True)
        (skill / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Does {name} things.\n---\nBody of {name}.\n"
        )
    return root


REFERENCE: dict[str, str] = {}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    folder=WORD,
    memory=st.one_of(st.just(""), WORD.map(lambda w: f"memo-{w}")),
    skills=st.lists(SKILL, max_size=3, unique=True),
    os_name=st.sampled_from(["Linux", "Darwin", "Windows", "FreeBSD"]),
    date=st.dates().map(lambda d: d.isoformat()),
    env_value=WORD,
)
def test_prefix_bytes_never_change(
    folder: str, memory: str, skills: list[str], os_name: str, date: str, env_value: str
) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.object(platform, "system", lambda: os_name),
        mock.patch.object(time, "strftime", lambda fmt, *a: date),
        mock.patch.dict(os.environ, {"USER": env_value, "KILN_TEST_VALUE": env_value, "PWD": tmp}),
    ):
        root = make_root(Path(tmp), folder, memory, skills)
        prefix, sent = frozen_bytes(root)
    frozen, tail = sent.split("\0")
    assert REFERENCE.setdefault("prefix", prefix) == prefix
    assert REFERENCE.setdefault("sent", frozen) == frozen
    # ... and the dynamic values did reach the model, at the tail
    assert folder in tail and os_name in tail and date in tail
    if memory:
        assert memory in tail and memory not in frozen
    for name in skills:
        assert f"- {name}: Does {name} things." in tail


def test_prefix_is_identical_across_sessions_and_turns(tmp_path: Path) -> None:
    root = make_root(tmp_path, "ws", "use tabs", ["lint-fix"])
    model = ScriptedModel(["one", "two", "three"])
    session = Session.create(root, host=DiskHost(), config=AgentConfig(), model=model)
    asyncio.run(session.prompt("first"))
    other = Session.create(root, host=DiskHost(), config=AgentConfig(), model=model)
    asyncio.run(other.prompt("second"))
    asyncio.run(session.prompt("third"))
    sent = {canonical_json([r.system, [t.to_dict() for t in r.tools]]) for r in model.requests}
    assert len(sent) == 1
    # each request's messages extend the previous request of the same session byte for byte
    first, third = model.requests[0], model.requests[2]
    assert canonical_json(third.messages).startswith(canonical_json(first.messages)[:-1])


def test_tool_definitions_do_not_depend_on_what_is_installed(tmp_path: Path) -> None:
    """tool_search and call_tool have fixed definitions: the prefix of a workspace with a skill
    that declares tools is byte-identical to an empty one's; the namespaces ride at the tail,
    and a skill installed mid-session shows up there, never in ``tools``."""
    root = make_root(tmp_path, "ws", "", [])
    model = ScriptedModel(["one", "two"])
    session = Session.create(root, host=DiskHost(), config=AgentConfig(mode="ask"), model=model)
    asyncio.run(session.prompt("first"))
    tools = root / ".kiln" / "skills" / "db-tasks" / "tools"
    tools.mkdir(parents=True)
    (tools.parent / "SKILL.md").write_text(
        "---\nname: db-tasks\ndescription: Database chores.\n---\nBody.\n"
    )
    (tools / "run.py").write_text("print('ok')\n")
    (tools / "plan.json").write_text(
        '{"name": "plan", "description": "Plan migrations.", "command": "tools/run.py"}'
    )
    asyncio.run(session.prompt("second"))
    first, second = model.requests
    assert canonical_json([t.to_dict() for t in first.tools]) == canonical_json(
        [t.to_dict() for t in second.tools]
    )
    assert first.system == second.system
    tail = [b["text"] for b in second.messages[-1]["content"] if b.get("type") == "text"]
    assert any("<deferred_tools>" in t and "1 tools from 1 skill(s)" in t for t in tail)
    fresh = Session.create(
        root, host=DiskHost(), config=AgentConfig(mode="ask"), model=ScriptedModel(["x"])
    )
    assert fresh.context.prefix() == session.context.prefix()
