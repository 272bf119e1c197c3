from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skills_registry.deferred import ToolCatalog
from skills_registry.errors import McpConfigError, ToolCallError
from skills_registry.mcp_source import McpServerConfig, McpSource
from skills_registry.mcp_trust import plan_servers
from tests.waiting import wait_until

SERVER = Path(__file__).with_name("mcp_server.py")


def write_config(path: Path, servers: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))


def test_config_user_entry_wins_a_name_clash(tmp_path: Path) -> None:
    home = tmp_path / "kiln"
    write_config(
        home / "mcp.json",
        {"notes": {"command": "user-notes"}, "web": {"url": "http://127.0.0.1:1/mcp"}},
    )
    write_config(
        tmp_path / ".kiln" / "mcp.json",
        {"notes": {"command": "python", "args": ["s.py"], "env": {"A": "1"}}},
    )
    plan = plan_servers(tmp_path, home)
    assert [(c.name, c.command) for c in plan.runnable()] == [
        ("notes", "user-notes"),
        ("web", None),
    ]
    assert plan.runnable()[1].transport == "http"
    project = plan.project("notes")
    assert project is not None and project.status == "shadowed"
    assert project.config.args == ["s.py"] and project.config.env == {"A": "1"}
    assert plan_servers(tmp_path / "none", tmp_path / "none").servers == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"servers": {}}', "missing the 'mcpServers' object"),
        ('{"mcpServers": {"a": {}}}', "needs exactly one of 'command' (stdio) or 'url' (HTTP)"),
        (
            '{"mcpServers": {"a": {"command": "x", "args": "y"}}}',
            "'args' must be a list of strings",
        ),
        ('{"mcpServers": {"a": {"url": "ftp://x"}}}', "'url' must be an http(s) URL"),
        (
            '{"mcpServers": {"a": {"type": "sse", "command": "x"}}}',
            """'type' "sse" does not fit its command (use stdio)""",
        ),
        (
            '{"mcpServers": {"a": {"type": "websocket", "url": "http://x"}}}',
            """'type' "websocket" does not fit its url (use http or sse)""",
        ),
        (
            '{"mcpServers": {"a": {"command": "x", "env": {"A": 1}}}}',
            "'env' must be an object of string values",
        ),
    ],
)
def test_config_errors_are_precise(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / ".kiln").mkdir()
    (tmp_path / ".kiln" / "mcp.json").write_text(content)
    with pytest.raises(McpConfigError) as info:
        plan_servers(tmp_path, tmp_path / "home")
    assert message in str(info.value) and info.value.exit_code == 2 and info.value.hint


async def check_notes_server(source: McpSource) -> None:
    await source.start()
    try:
        assert "Team notes" in source.instructions
        tools = await source.list_tools()
        assert sorted(t.name for t in tools) == [
            "notes__add_numbers",
            "notes__explode",
            "notes__search_notes",
        ]
        catalog = ToolCatalog()
        catalog.extend(tools)
        catalog.describe_namespace("notes", source.instructions)
        found = catalog.search("search team notes", k=1)
        assert [t.name for t in found] == ["notes__search_notes"]
        assert await found[0].call({"query": "deploy"}) == "deploy checklist: run migrations first"
        add = catalog.get("notes__add_numbers")
        assert add is not None and add.input_schema["required"] == ["a", "b"]
        assert await add.call({"a": 2, "b": 40}) == "42"
        with pytest.raises(ToolCallError, match="notes__explode failed: .*explode"):
            await catalog.get("notes__explode").call({"reason": "boom"})  # type: ignore[union-attr]
    finally:
        await source.close()
    with pytest.raises(ToolCallError, match="not running"):
        await source.call("add_numbers", {"a": 1, "b": 1})


@pytest.mark.slow
async def test_stdio_server_tools_listed_searched_and_called() -> None:
    config = McpServerConfig(name="notes", command=sys.executable, args=[str(SERVER)])
    await check_notes_server(McpSource(config))


async def test_server_that_cannot_start_is_one_clear_error(tmp_path: Path) -> None:
    config = McpServerConfig(
        name="ghost", command=str(tmp_path / "missing-binary"), origin="mcp.json"
    )
    with pytest.raises(ToolCallError, match="MCP server 'ghost' failed to start") as info:
        await McpSource(config, start_timeout=20).start()
    assert "mcp.json" in info.value.hint


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=["http"])
def http_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """The notes server over HTTP: streamable HTTP (``/mcp``), or HTTP+SSE (``/sse``) when a test
    parametrizes this fixture with ``"sse"``."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), request.param, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def listening() -> bool:
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", port)) == 0

        assert wait_until(listening), "the MCP HTTP server did not listen within 60 s"
        yield f"http://127.0.0.1:{port}/{'mcp' if request.param == 'http' else 'sse'}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
async def test_streamable_http_server(http_server: str) -> None:
    await check_notes_server(McpSource(McpServerConfig(name="notes", url=http_server)))


@pytest.mark.parametrize("http_server", ["sse"], indirect=True)
def test_an_sse_entry_is_served_over_sse(http_server: str, tmp_path: Path, kiln_home: Path) -> None:
    """`"type": "sse"` (the shape other clients write for an HTTP+SSE server) was ignored: the
    entry was spoken to as streamable HTTP and failed to start. Through `kiln run`."""
    from tests.skills.test_mcp_hostile import run

    servers = {"notes": {"type": "sse", "url": http_server}}
    search = {"tool_calls": [{"name": "tool_search", "input": {"query": "search team notes"}}]}
    call = {"tool_calls": [{"name": "call_tool", "input": {"name": "notes__search_notes",
                                                          "arguments": {"query": "deploy"}}}]}  # fmt: skip
    stderr, [found, called] = run(tmp_path, kiln_home, servers, [search, call])
    assert "notes__search_notes" in found, stderr
    assert "deploy checklist: run migrations first" in called, stderr


async def test_server_that_never_answers_times_out_and_is_stopped(tmp_path: Path) -> None:
    config = McpServerConfig(
        name="mute", command=sys.executable, args=["-c", "import time; time.sleep(60)"]
    )
    source = McpSource(config, start_timeout=1)
    with pytest.raises(ToolCallError, match="did not initialise within 1s"):
        await source.start()
    assert source._task is None  # the connection task (and its process) is gone
