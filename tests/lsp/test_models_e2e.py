"""``kiln/models/list``: what a model picker offers, against a real ``kiln lsp``."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer
from tests.lsp.conftest import running, server_env
from tests.lsp.raw_client import RawServer

pytestmark = pytest.mark.e2e


async def test_an_openai_compatible_server_lists_its_own_models(
    workspace: Path, kiln_home: Path
) -> None:
    with WireServer([], model="qwen2.5-coder:7b") as wire:
        env = server_env(kiln_home, OPENAI_BASE_URL=wire.openai_base_url, KILN_MODEL="mine")
        async with running(workspace, env) as editor:
            listed = await editor.request("kiln/models/list", {})
    assert listed["provider"] == "openai" and listed["source"] == "server"
    assert listed["current"] == "mine"
    assert listed["models"] == [
        {"id": "mine", "source": "configured"},
        {"id": "qwen2.5-coder:7b", "source": "server"},
    ]
    assert "note" not in listed


async def test_an_unreachable_server_falls_back_to_known_models_and_says_so(
    workspace: Path, kiln_home: Path
) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = server_env(kiln_home, OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1")
    async with running(workspace, env) as editor:
        listed = await editor.request("kiln/models/list", {})
    assert listed["source"] == "known" and listed["current"] == "gpt-4.1"
    ids = [m["id"] for m in listed["models"]]
    assert ids[0] == "gpt-4.1" and "gpt-4o-mini" in ids
    assert f"127.0.0.1:{port}" in listed["note"] and "known models" in listed["note"]


async def test_anthropic_lists_the_configured_model_then_known_ones_without_a_request(
    workspace: Path, kiln_home: Path
) -> None:
    with WireServer([]) as wire:
        env = server_env(kiln_home, ANTHROPIC_BASE_URL=wire.url, ANTHROPIC_API_KEY="test")
        async with running(workspace, env, options={"model": "claude-opus-4-5"}) as editor:
            listed = await editor.request("kiln/models/list", {})
        assert wire.requests == []
    assert listed["provider"] == "anthropic" and listed["current"] == "claude-opus-4-5"
    ids = [m["id"] for m in listed["models"]]
    assert ids[0] == "claude-opus-4-5" and ids.count("claude-opus-4-5") == 1
    assert "claude-sonnet-4-6" in ids


async def test_the_scripted_provider_lists_its_model(workspace: Path, scripted_env: object) -> None:
    async with running(workspace, scripted_env([])) as editor:  # type: ignore[operator]
        listed = await editor.request("kiln/models/list", {})
    assert listed == {
        "provider": "scripted",
        "current": "scripted",
        "source": "known",
        "models": [{"id": "scripted", "source": "configured"}],
    }


async def test_no_provider_configured_is_not_available_with_the_hint(
    workspace: Path, kiln_home: Path
) -> None:
    """PROTOCOL.md §6: no provider at all (no keys, no KILN_PROVIDER, no local extra) is
    -31005 with the hint that says how to configure one."""
    code = (  # as if the local extra were not installed (find_spec answers None)
        "import sys; sys.modules['llama_cpp'] = None\n"
        "from lsp_server.lsp.server import run\n"
        "sys.exit(run())\n"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, cwd=str(workspace), env=server_env(kiln_home),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    server = RawServer(proc)
    try:
        await server.initialize(workspace, initializationOptions={"index": False})
        reply = await server.request(1, "kiln/models/list")
        assert reply["error"]["code"] == -31005, reply
        assert "ANTHROPIC_API_KEY" in reply["error"]["data"]["hint"]
    finally:
        await server.close()
