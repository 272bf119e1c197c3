"""Fixtures for driving `kiln lsp` end to end: a workspace, a scripted model, a started editor."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.kiln_client import Editor


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text(
        'def greet(name):\n    return "😀 hello " + name\n', encoding="utf-8"
    )
    (root / "notes.txt").write_text("café au lait\n", encoding="utf-8")
    return root


def server_env(kiln_home: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "KILN_"))
    }
    env.update(KILN_HOME=str(kiln_home), PYTHONUNBUFFERED="1", **extra)
    return env


@pytest.fixture
def scripted_env(kiln_home: Path, tmp_path: Path) -> Callable[[list[Any]], dict[str, str]]:
    """Env for a server whose model is the in-package scripted model reading ``steps``."""

    def make(steps: list[Any]) -> dict[str, str]:
        script = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
        script.write_text(json.dumps(steps), encoding="utf-8")
        return server_env(kiln_home, KILN_PROVIDER="scripted", KILN_SCRIPT=str(script))

    return make


@asynccontextmanager
async def running(root: Path, env: dict[str, str], **kwargs: Any) -> AsyncIterator[Editor]:
    options = kwargs.pop("options", None)
    settings = kwargs.pop("settings", None)
    editor = Editor(**kwargs)
    try:
        await editor.start(root, env, options, settings)
        yield editor
    finally:
        await editor.close()
        assert b"Traceback" not in editor.stderr, editor.stderr.decode(errors="replace")


async def prompt_once(editor: Editor, text: str = "hi") -> dict[str, Any]:
    """A new session and one prompt in it; the prompt's result."""
    session = await editor.request("kiln/session/new", {})
    return await editor.request(
        "kiln/session/prompt",
        {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": text}]},
    )


def status_texts(updates: Iterable[dict[str, Any]]) -> list[str]:
    """The text of every ``status`` session update among ``updates``."""
    return [
        u["update"].get("text", "")
        for u in updates
        if u.get("update", {}).get("sessionUpdate") == "status"
    ]
