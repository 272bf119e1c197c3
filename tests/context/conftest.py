"""Fixtures for context tests: a small real workspace and a helper to run scripted sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.events import Event
from agent.providers.scripted import ScriptedModel
from agent.session import AgentConfig, DiskHost, Session


def call(name: str, **args: object) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": args}]}


def big_module(name: str, lines: int = 150) -> str:
    return "".join(f"def {name}_{i}(x):  # helper number {i} of {name}\n" for i in range(lines))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    for name in ("alpha", "beta", "gamma", "delta"):
        (root / "src" / f"{name}.py").write_text(big_module(name))
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    return root


def make_session(
    root: Path, script: list[Any], *, window: int = 200_000, mode: str = "yolo", **cfg: Any
) -> tuple[Session, list[Event]]:
    events: list[Event] = []
    session = Session.create(
        root,
        host=DiskHost(events.append),
        config=AgentConfig(mode=mode, **cfg),
        model=ScriptedModel(script, context_window=window),
    )
    return session, events
