"""The MCP servers an ACP client passes in ``session/new`` (docs/acp.md, "MCP servers"), through
the real `kiln acp` and a real stdio MCP server (``tests/skills/mcp_server.py``):

- a stdio entry starts for that session, with its ``env``, in the sandbox; its tools are called
  like the user's; it replaces a configured server of the same name; nothing is written;
- a server that cannot start (missing, exits at once, never answers) costs a bounded wait and a
  one-line thought at the first turn: the session is still created;
- the server processes end when the connection ends, on SIGTERM, and on SIGKILL of `kiln acp`.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

from tests.acp.conftest import EditorClient
from tests.skills.test_mcp import http_server  # noqa: F401 - the fixture

pytestmark = pytest.mark.e2e

NOTES_SERVER = Path(__file__).parents[1] / "skills" / "mcp_server.py"
# Records in the file argv[1] its variable KILN_TEST_TOKEN and whether it sees a file of the
# host's /tmp (the sandbox has its own /tmp), then serves the notes tools.
RECORDING_SERVER = """import json, os, pathlib, runpy, sys
seen = {{"token": os.environ.get("KILN_TEST_TOKEN", "unset"), "sees_host_tmp": os.path.exists({probe!r}),
        "cwd": os.getcwd()}}
pathlib.Path(sys.argv[1]).write_text(json.dumps(seen))
sys.argv = sys.argv[:1]
runpy.run_path({server!r}, run_name="__main__")
"""


def recording_server(root: Path) -> Path:
    """The recording notes server, copied into the workspace (the sandbox's /tmp is its own, so
    the tests' checkout under /tmp is out of its sight); returns the script."""
    folder = root / ".kiln"
    folder.mkdir(exist_ok=True)
    shutil.copyfile(NOTES_SERVER, folder / "notes_impl.py")
    probe = root.parent / "host-only"
    probe.write_text("on the host")
    script = folder / "client_server.py"
    script.write_text(
        RECORDING_SERVER.format(server=str(folder / "notes_impl.py"), probe=str(probe))
    )
    return script


def recorded(root: Path, marker: str = "client-started") -> dict[str, Any]:
    return dict(json.loads((root / marker).read_text()))


SEARCH = {"tool_calls": [{"name": "tool_search", "input": {"query": "add two numbers"}}]}
CALL = {
    "tool_calls": [
        {
            "name": "call_tool",
            "input": {"name": "notes__add_numbers", "arguments": {"a": 2, "b": 40}},
        }
    ]
}


def client_server(root: Path, marker: str, name: str = "notes", token: str = "t") -> McpServerStdio:
    """A stdio entry running the recording notes server."""
    script = recording_server(root)
    return McpServerStdio(
        name=name,
        command=sys.executable,
        args=[str(script), str(root / marker)],
        env=[EnvVariable(name="KILN_TEST_TOKEN", value=token)],
    )


def processes_running(token: str) -> list[int]:
    """Pids whose command line holds ``token`` (the sandbox's bwrap and the server under it)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next(
                (
                    ln
                    for ln in (entry / "status").read_text().splitlines()
                    if ln.startswith("State")
                ),
                "",
            )
        except OSError:
            continue
        if token in cmdline and "zombie" not in state:
            pids.append(int(entry.name))
    return pids


async def until_gone(token: str, timeout: float = 30) -> None:
    """Wait (bounded) until no process with ``token`` in its command line is left."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while processes_running(token):
        assert loop.time() < deadline, f"still running: {processes_running(token)}"
        await asyncio.sleep(0.05)


async def test_a_client_server_serves_its_tools_for_the_session_and_ends_with_it(
    spawn, workspace: Path, kiln_home: Path
) -> None:
    server = client_server(workspace, "client-started", token="from-the-client")
    token = str(workspace / ".kiln" / "client_server.py")
    client = EditorClient()
    async with spawn([SEARCH, CALL, "Done."], client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[server])).session_id
        # Started with the session (not at the first search), in the sandbox, with the env the
        # client gave.
        assert processes_running(token)
        seen = {"token": "from-the-client", "sees_host_tmp": False, "cwd": str(workspace)}
        assert recorded(workspace) == seen
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "add"}])
        assert result.stop_reason == "end_turn"
        # Its tool asks like any MCP tool of the user's (the client answered allow_once).
        [asked] = [
            p for p in client.permissions if p["tool_call"]["_meta"]["tool"] != "tool_search"
        ]
        assert asked["tool_call"]["_meta"]["tool"] == "notes__add_numbers"
        done = [u for u in client.updates if u.get("status") == "completed"]
        output = json.dumps(done[-1]["content"])
        assert "42" in output and 'source=\\"tool:notes__add_numbers\\"' in output
    await until_gone(token)  # stdin closed: the session's servers end with the process
    assert not (kiln_home / "mcp.json").exists()
    assert not (kiln_home / "mcp-approvals.json").exists()


async def test_session_load_starts_the_clients_servers_for_the_loaded_session(
    spawn, workspace: Path
) -> None:
    server = client_server(workspace, "client-started")
    token = str(workspace / ".kiln" / "client_server.py")
    async with spawn(["Hello."], EditorClient()) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "hi"}])
    assert not (workspace / "client-started").exists()  # that session had no servers
    client = EditorClient()
    async with spawn([SEARCH, CALL, "Done."], client) as agent:
        await agent.start()
        await agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[server])
        assert processes_running(token)
        await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "add"}])
    completed = [u for u in client.updates if u.get("status") == "completed"]
    assert 'tool:notes__add_numbers\\">\\n42' in json.dumps(completed[-1]["content"])
    await until_gone(token)


@pytest.mark.parametrize("http_server", ["http", "sse"], indirect=True)
async def test_a_client_http_server_is_connected_to(
    spawn,
    workspace: Path,
    http_server: str,  # noqa: F811 - the fixture
) -> None:
    """Streamable HTTP, and HTTP+SSE: an `sse` entry was refused with -32602 (and `initialize`
    said `mcpCapabilities.sse: false`), though Zed passes such servers as they are configured."""
    kind = "sse" if http_server.endswith("/sse") else "http"
    server = (SseMcpServer if kind == "sse" else HttpMcpServer)(
        type=kind, name="notes", url=http_server, headers=[HttpHeader(name="X-A", value="b")]
    )
    client = EditorClient()
    async with spawn([SEARCH, CALL, "Done."], client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[server])).session_id
        await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "add"}])
    completed = [u for u in client.updates if u.get("status") == "completed"]
    assert 'tool:notes__add_numbers\\">\\n42' in json.dumps(completed[-1]["content"])


async def test_the_clients_server_replaces_the_users_and_the_repositorys_of_that_name(
    spawn, workspace: Path, kiln_home: Path
) -> None:
    server = client_server(workspace, "client-started")
    users = {
        "command": sys.executable,
        "args": [str(workspace / ".kiln" / "client_server.py"), str(workspace / "user-started")],
    }
    user_config = json.dumps({"mcpServers": {"notes": users}})
    (kiln_home / "mcp.json").write_text(user_config)
    (workspace / ".kiln" / "mcp.json").write_text(user_config.replace("user-started", "repo"))
    client = EditorClient()
    async with spawn([SEARCH, CALL, "Done."], client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=[server])).session_id
        await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "add"}])
    assert (workspace / "client-started").exists()
    assert not (workspace / "user-started").exists() and not (workspace / "repo").exists()
    thought = client.text("agent_thought_chunk")
    assert (
        "MCP server notes from $KILN_HOME/mcp.json not used in this session: the client's "
        "server of that name replaces it"
    ) in thought, thought
    assert "from .kiln/mcp.json not used in this session" in thought
    assert "kiln mcp approve" not in thought  # nothing to approve: the client's is used
    assert (kiln_home / "mcp.json").read_text() == user_config  # never written
    assert not (kiln_home / "mcp-approvals.json").exists()


async def test_servers_that_cannot_start_cost_a_bounded_wait_and_a_thought(
    spawn, workspace: Path
) -> None:
    mute = workspace / ".kiln" / "mute.py"
    mute.parent.mkdir(exist_ok=True)
    mute.write_text("import sys\nsys.stdin.read()\n")  # never answers the handshake
    garbage = "print('hello, I am not JSON-RPC', flush=True)"
    broken = [
        McpServerStdio(name="ghost", command="/nonexistent/kiln-mcp", args=[], env=[]),
        McpServerStdio(
            name="quits", command=sys.executable, args=["-c", "raise SystemExit(3)"], env=[]
        ),  # fmt: skip
        McpServerStdio(name="babbles", command=sys.executable, args=["-c", garbage], env=[]),
        McpServerStdio(name="mute", command=sys.executable, args=[str(mute)], env=[]),
    ]
    client = EditorClient()
    async with spawn([SEARCH, CALL, "Done."], client) as agent:  # each session runs the script
        await agent.start()
        new = agent.conn.new_session(
            cwd=str(workspace), mcp_servers=broken, kiln={"mcpStartTimeout": 3}
        )
        sid = (await new).session_id  # created all the same
        await until_gone(str(mute))  # the one that never answered was stopped, not left behind
        await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "add"}])
        thought = client.text("agent_thought_chunk")
        for name in ("ghost", "quits", "babbles"):
            assert f"MCP server '{name}' failed to start: Connection closed" in thought, thought
        assert "MCP server 'mute' did not initialise within 3s" in thought
        # One broken server does not take a healthy one down with it (default bound).
        healthy = [broken[0], client_server(workspace, "client-started")]
        sid = (await agent.conn.new_session(cwd=str(workspace), mcp_servers=healthy)).session_id
        await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "add"}])
    completed = [u for u in client.updates if u.get("status") == "completed"]
    assert "42" in json.dumps(completed[-1]["content"])


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
async def test_the_servers_end_when_kiln_acp_is_killed(
    spawn, workspace: Path, how: signal.Signals
) -> None:
    server = client_server(workspace, "client-started")
    token = str(workspace / ".kiln" / "client_server.py")
    async with spawn(["Done."], EditorClient()) as agent:
        await agent.start()
        await agent.conn.new_session(cwd=str(workspace), mcp_servers=[server])
        assert processes_running(token)
        agent.process.send_signal(how)
        await agent.process.wait()
        await until_gone(token)


def _check(reply: dict[str, Any], *needles: str) -> None:
    error = reply["error"]
    assert error["code"] == -32602, reply
    assert "\n" not in error["message"]
    shown = error["message"] + json.dumps(error.get("data"))
    assert all(n in shown for n in needles), (needles, error)


async def test_a_malformed_entry_is_one_error_and_nothing_is_stored(
    workspace: Path, kiln_home: Path, tmp_path: Path
) -> None:
    from tests.acp.test_acp_meta import RawAcp

    marker = workspace / "started"
    ok = {"name": "ok", "command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"],
          "env": []}  # fmt: skip
    bad = [
        ("a list", "Input should be a valid list", {"name": "x"}),  # the SDK's own check
        ("an object", "mcpServers[1] must be an object", [ok, 5]),
        ("'name'", "'name' must be a non-empty string", [{**ok, "name": ""}]),
        ("absolute path", "'command' must be an absolute path", [{**ok, "command": "python3"}]),
        ("'args'", "'args' must be a list of strings", [{**ok, "args": "-c"}]),
        ("'env'", "'env' must be a list of {name, value}", [{**ok, "env": {"A": "1"}}]),
        ("'env'", "'env' must be a list of {name, value}", [{**ok, "env": [{"name": "A"}]}]),
        ("twice", "the name ok appears twice", [ok, {**ok, "args": []}]),
        ("sse", "'url' must be an http(s) URL",
         [{"type": "sse", "name": "s", "url": "ws://127.0.0.1:9/", "headers": []}]),
        ("type", "unknown type 'carrier-pigeon'", [{**ok, "type": "carrier-pigeon"}]),
    ]  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text("[]")
    async with RawAcp(kiln_home, KILN_SCRIPT=str(script)) as acp:
        await acp.call("initialize", {"protocolVersion": 1})
        for _, needle, servers in bad:
            for method, extra in (("session/new", {}), ("session/load", {"sessionId": "s"})):
                params = {"cwd": str(workspace), "mcpServers": servers, **extra}
                _check(await acp.call(method, params), needle)
        listed = await acp.call("session/list", {})
        assert listed["result"]["sessions"] == []
    assert not marker.exists()
