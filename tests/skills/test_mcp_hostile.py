"""Badly behaved MCP servers (real processes, `tests/skills/hostile_mcp.py`) through the real
`kiln run` with the scripted model: whatever one server does, the run goes on within the
documented bounds, the other servers' tools still work, and what went wrong is one line
(README, "MCP servers"; docs/security.md section 6a)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.security.scripted_run import kiln_run, tool_results

HOSTILE = Path(__file__).with_name("hostile_mcp.py")
SEARCH = {"tool_calls": [{"name": "tool_search", "input": {"query": "echo text back"}}]}


def server(*argv: str) -> dict[str, Any]:
    """An entry that runs the hostile server. It runs in the sandbox, which sees a private /tmp:
    `run` copies the script into the workspace, and `python3` is found on the sandbox's PATH
    (this interpreter may live under /tmp, as a CI job's virtualenv can)."""
    return {"command": "python3", "args": [HOSTILE.name, *argv]}


def placed(root: Path, servers: dict[str, Any]) -> dict[str, Any]:
    """``servers`` with the hostile script copied into the workspace and named by that path."""
    placed = root / HOSTILE.name
    placed.write_bytes(HOSTILE.read_bytes())
    return {
        name: {**entry, "args": [str(placed), *entry["args"][1:]]}
        if entry.get("args", [None])[0] == HOSTILE.name
        else entry
        for name, entry in servers.items()
    }


def run(
    tmp_path: Path,
    kiln_home: Path,
    servers: dict[str, Any],
    steps: list[Any],
    *,
    exit_code: int = 0,
    **env: str,
) -> tuple[str, list[str]]:
    """(stderr, text of each tool result) of one `kiln run` with these user servers, which exits
    with ``exit_code``."""
    root = tmp_path / "repo"
    root.mkdir(exist_ok=True)
    (kiln_home / "mcp.json").write_text(json.dumps({"mcpServers": placed(root, servers)}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([*steps, "done"]))
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, env=env, timeout=90)
    assert proc.returncode == exit_code, proc.stderr
    transcript = Path(json.loads(proc.stdout)["transcript"])
    texts = [
        c if isinstance(c, str) else "\n".join(b.get("text", "") for b in c)
        for c in tool_results(transcript)
    ]
    return proc.stderr, texts


def test_a_server_that_never_lists_its_tools_costs_a_bounded_wait(
    tmp_path: Path, kiln_home: Path
) -> None:
    """It answered `initialize` and never `tools/list`: the first `tool_search` waited forever
    (only the handshake had a bound), and every other server's tools with it."""
    servers = {"mute": server("mute-list"), "good": server("plain")}
    stderr, [found] = run(tmp_path, kiln_home, servers, [SEARCH], KILN_MCP_START_TIMEOUT="3")
    assert "good__echo" in found and "mute__" not in found
    assert "MCP server 'mute' did not list its tools within 3s" in stderr


def test_a_malformed_tools_list_is_one_line_and_spares_the_other_servers(
    tmp_path: Path, kiln_home: Path
) -> None:
    """One tool whose `inputSchema` was a string failed `tool_search` itself with the SDK's
    multi-line pydantic dump, so the other servers' tools could not be found either."""
    bad = [{"name": "echo", "inputSchema": "nope"}]
    servers = {"bad": server("tools", json.dumps(bad)), "good": server("plain")}
    stderr, [found] = run(tmp_path, kiln_home, servers, [SEARCH])
    assert "good__echo" in found and "validation error" not in found
    [line] = [ln for ln in stderr.splitlines() if "'bad'" in ln]
    assert line.endswith(
        "MCP server 'bad' answered tools/list with an error: tools.0.inputSchema: "
        "Input should be a valid dictionary or instance of InputSchema"
    )


def test_tools_with_an_invalid_schema_or_a_taken_name_are_left_out(
    tmp_path: Path, kiln_home: Path
) -> None:
    """A tool whose schema was no JSON Schema (`"type": "bogus"`) was offered, and each call of
    it failed with jsonschema's multi-line SchemaError; a second tool of the same name silently
    replaced the first."""
    tools = [
        {"name": "echo", "inputSchema": {"type": "object", "properties": {"t": {"type": "bogus"}}}},
        {
            "name": "note",
            "description": "Echo text back, first.",
            "inputSchema": {"type": "object"},
        },
        {
            "name": "note",
            "description": "Echo text back, second.",
            "inputSchema": {"type": "object"},
        },
    ]
    call = {"tool_calls": [{"name": "call_tool", "input": {"name": "odd__echo", "arguments": {}}}]}
    stderr, [found, called] = run(
        tmp_path, kiln_home, {"odd": server("tools", json.dumps(tools))}, [SEARCH, call]
    )
    assert "odd__note" in found and "first" in found and "second" not in found
    assert "odd__echo" not in found and "unknown tool 'odd__echo'" in called
    assert (
        "MCP server 'odd': tool echo left out: its input schema is invalid at properties/t/type: "
        "'bogus' is not valid under any of the given schemas" in stderr
    )
    assert "MCP server 'odd': tool note left out: a tool of that name came first" in stderr


def test_the_call_timeout_is_honoured(tmp_path: Path, kiln_home: Path) -> None:
    """A call that never came back held the turn for the fixed 120 s; `KILN_MCP_CALL_TIMEOUT`
    now sets the bound (README)."""
    call = {"tool_calls": [{"name": "call_tool", "input": {"name": "slow__echo",
                                                          "arguments": {"text": "hi"}}}]}  # fmt: skip
    stderr, [_, called] = run(
        tmp_path, kiln_home, {"slow": server("slow-call", "600")}, [SEARCH, call],
        KILN_MCP_CALL_TIMEOUT="2",
    )  # fmt: skip
    assert "slow__echo: no answer within 2s" in called


@pytest.mark.parametrize(
    ("name", "value", "line"),
    [
        *[("KILN_MCP_START_TIMEOUT", v, "above 0, at most 600")
          for v in ("abc", "1e300", "inf", "nan", "-0", "0", "600.0001")],
        *[("KILN_MCP_CALL_TIMEOUT", v, "above 0, at most 86,400")
          for v in ("soon", "1e999", "nan", "-0", "86401")],
    ],
)  # fmt: skip
def test_a_bad_timeout_setting_is_one_line_and_exit_2(
    tmp_path: Path, kiln_home: Path, name: str, value: str, line: str
) -> None:
    """A bad value was a warning printed twice in text mode (once as a warning, once as a note)
    and the default used; `1e300` passed as a start bound though README says at most 600 s.
    Now any value outside the documented range ends the run before it starts: one line, exit 2."""
    root = tmp_path / "repo"
    root.mkdir()
    (kiln_home / "mcp.json").write_text(
        json.dumps({"mcpServers": placed(root, {"good": server("plain")})})
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["done"]))
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script, output="text",
                    env={name: value})  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"kiln: {name}={value} is not a number of seconds {line}"
        f" (unset it for the default of {30 if 'START' in name else 120})"
    ]
    assert proc.stdout == ""


def test_the_largest_start_timeout_is_taken(tmp_path: Path, kiln_home: Path) -> None:
    """600 s itself is inside the range (README: at most 600)."""
    stderr, [found] = run(tmp_path, kiln_home, {"good": server("plain")}, [SEARCH],
                          KILN_MCP_START_TIMEOUT="600")  # fmt: skip
    assert "good__echo" in found and "KILN_MCP" not in stderr


def test_a_server_flooding_stderr_is_cut_short(tmp_path: Path, kiln_home: Path) -> None:
    """Its 20 MB of stderr all went to ours (the user's terminal, the editor's log); now the
    first 64 KB do, then one line says the rest is dropped, and the server still serves."""
    stderr, [found] = run(tmp_path, kiln_home, {"loud": server("stderr-flood", "20")}, [SEARCH])
    assert "loud__echo" in found
    assert len(stderr) < 200_000, len(stderr)
    assert "[MCP server 'loud': stderr past 64 KB dropped]" in stderr


def test_a_server_that_exits_mid_call_is_started_again_at_the_next(
    tmp_path: Path, kiln_home: Path
) -> None:
    """It exited while a call waited: that call failed with "Connection closed", and so did
    every later call of the session, though the server would have served them. The failed call
    now says the server exited, and the next one starts it again (twice at most)."""

    def call(text: str) -> dict[str, Any]:
        args = {"name": "flaky__echo", "arguments": {"text": text}}
        return {"tool_calls": [{"name": "call_tool", "input": args}]}

    marker = tmp_path / "repo" / "crashed-once"
    _, [_, first, second] = run(
        tmp_path, kiln_home, {"flaky": server("crash-once", str(marker))},
        [SEARCH, call("lost"), call("served")],
    )  # fmt: skip
    assert "flaky__echo: MCP server 'flaky' exited during the call" in first
    assert "(it is started again at the next call)" in first
    assert "served" in second and "error" not in second


def test_a_disabled_entry_is_not_started(tmp_path: Path, kiln_home: Path) -> None:
    """`"disabled": true`, as other MCP clients write a server the user turned off, was
    ignored: the server started anyway. It is now kept out, and `kiln mcp list` says why."""
    import os
    import subprocess

    marker = tmp_path / "repo" / "started"
    servers = {"off": {**server("deaf", str(marker)), "disabled": True}, "good": server("plain")}
    _, [found] = run(tmp_path, kiln_home, servers, [SEARCH])
    assert "good__echo" in found and "off__" not in found and not marker.exists()
    listed = subprocess.run(
        [sys.executable, "-m", "lsp_server", "mcp", "list"], cwd=tmp_path / "repo",
        env={**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home)},
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    [off] = [line for line in listed.splitlines() if line.startswith("off ")]
    assert 'disabled ("disabled": true)' in off


def test_requests_back_are_refused(tmp_path: Path, kiln_home: Path) -> None:
    """During a call the server asks Kiln for sampling (a model call on the user's account),
    the roots and an elicitation (a question to the user), and says its tools changed: each
    request gets a JSON-RPC error, and the call still completes (README, "MCP servers")."""
    call = {"tool_calls": [{"name": "call_tool", "input": {"name": "asker__echo",
                                                          "arguments": {}}}]}  # fmt: skip
    _, [_, called] = run(tmp_path, kiln_home, {"asker": server("ask-back")}, [SEARCH, call])
    answers = called.split("<external_content", 1)[-1].split("\n")[1].split(" | ")
    assert len(answers) == 3 and all(a.startswith("error -32") for a in answers), called


def test_a_server_whose_tools_changed_is_listed_again(tmp_path: Path, kiln_home: Path) -> None:
    """`notifications/tools/list_changed` was ignored: a tool the server added mid-session was
    never found, and a removed one was still offered. The next search lists the server again."""

    def call(name: str) -> dict[str, Any]:
        return {"tool_calls": [{"name": "call_tool", "input": {
            "name": f"grows__{name}", "arguments": {"text": "hi"}}}]}  # fmt: skip

    shout = {"tool_calls": [{"name": "tool_search", "input": {"query": "shout text capitals"}}]}
    steps = [SEARCH, call("echo"), shout, call("shout"), call("echo")]
    _, [found, echoed, found_later, shouted, gone] = run(
        tmp_path, kiln_home, {"grows": server("grows")}, steps
    )
    assert "grows__echo" in found and "grows__shout" not in found
    assert "hi" in echoed
    assert "grows__shout" in found_later and "grows__echo" not in found_later
    assert "HI" in shouted
    assert "MCP server 'grows' no longer offers this tool" in gone, gone
