"""`kiln acp` as a process: raw framing errors, regular-file stdio, modes, SIGTERM mid-turn."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import KILN_ACP, EditorClient

pytestmark = pytest.mark.e2e


def frame(id_: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})


def run_raw(
    lines: list[str], kiln_home: Path, provider: str = "scripted", **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    env = {"KILN_HOME": str(kiln_home), "PATH": "/usr/bin:/bin", "KILN_PROVIDER": provider}
    return subprocess.run(
        KILN_ACP,
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        **kwargs,
    )


def test_malformed_frames_get_errors_and_the_server_keeps_serving(kiln_home: Path) -> None:
    done = run_raw(
        [
            "this is not json",
            "[1, 2]",
            frame(1, "session/prompt", {"sessionId": 5}),
            frame(4, "session/list", {}),  # before initialize: -32600 (ACP errors table)
            frame(5, "no/such/request", {}),  # also for an unknown method or bad params
            # Unknown notifications are ignored (never answered); an unknown request is -32601.
            json.dumps({"jsonrpc": "2.0", "method": "_kiln/no_such_notification", "params": {}}),
            json.dumps({"jsonrpc": "2.0", "method": "no/such", "params": {}}),
            frame(2, "initialize", {"protocolVersion": 1}),
            frame(3, "_kiln/no_such_request", {}),
        ],
        kiln_home,
    )
    assert done.returncode == 0
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(replies) == 7, replies
    assert replies[0]["error"]["code"] == -32700
    # A batch of two non-messages: JSON-RPC's answer, an array of two errors with `id: null`.
    assert [(r["id"], r["error"]["code"]) for r in replies[1]] == [(None, -32600)] * 2
    by_id = {r["id"]: r for r in replies[2:]}
    assert by_id[1]["error"]["code"] == -32600 and by_id[5]["error"]["code"] == -32600
    assert by_id[2]["result"]["agentInfo"]["name"] == "kiln"
    assert by_id[3]["error"]["code"] == -32601 and by_id[4]["error"]["code"] == -32600
    assert "Traceback" not in done.stderr


def test_the_answered_protocol_version_is_the_one_kiln_speaks(kiln_home: Path) -> None:
    """ACP version negotiation: the agent answers the requested version if it supports it,
    else the latest it supports. Kiln speaks version 1 only: a client asking for 0 (the
    pre-release protocol) or 7 is answered 1, never its own number back."""
    for asked in (0, 1, 7):
        done = run_raw([frame(1, "initialize", {"protocolVersion": asked})], kiln_home)
        (reply,) = [json.loads(line) for line in done.stdout.splitlines()]
        assert reply["result"]["protocolVersion"] == 1, (asked, reply)


def test_too_deep_or_too_large_messages_get_one_error_each(kiln_home: Path) -> None:
    """A message nested deeper than the parser's stack ended the reader (no answer to anything
    after it); one over the 50 MB line limit answered twice (its tail read as a message). A
    request over the limit was answered with `id: null`, so the client waited on its id for
    ever: its id is read from the head of the line when it comes before the params. (50,000
    levels: past the parser's stack, under the 100,000 values a message may hold.)"""
    deep = '{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": ' + "[" * 50_000
    huge = frame(8, "session/prompt", {"sessionId": "s", "prompt": [{"type": "text",
                 "text": "a" * (51 * 1024 * 1024)}]})  # fmt: skip
    params_first = json.dumps({"params": {"x": "a" * (51 * 1024 * 1024), "id": 3},
                               "jsonrpc": "2.0", "id": 9, "method": "initialize"})  # fmt: skip
    done = run_raw([deep + "]" * 50_000 + "}", huge, params_first,
                    frame(2, "initialize", {"protocolVersion": 1})], kiln_home)  # fmt: skip
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["id"], r.get("error", {}).get("code")) for r in replies] == [
        (None, -32700), (8, -32600), (None, -32600), (2, None)
    ]  # fmt: skip
    assert "exceeds the size limit" in replies[1]["error"]["data"]["details"]
    assert replies[3]["result"]["agentInfo"]["name"] == "kiln"
    assert "Traceback" not in done.stderr


def test_stdin_closing_mid_turn_answers_cancelled_and_exits_0(
    tmp_path: Path, kiln_home: Path
) -> None:
    """docs/acp.md: when the client closes stdin, a running turn is cancelled after the grace
    period, its prompt is answered `cancelled`, and the process exits 0."""
    root = tmp_path / "ws"
    root.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"wait_for": str(tmp_path / "never")}]))
    prompt = {"sessionId": "SID", "prompt": [{"type": "text", "text": "go"}]}
    proc = subprocess.Popen(
        KILN_ACP,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"KILN_HOME": str(kiln_home), "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)},
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(frame(0, "initialize", {"protocolVersion": 1}) + "\n")
    proc.stdin.write(frame(1, "session/new", {"cwd": str(root), "mcpServers": []}) + "\n")
    proc.stdin.flush()
    replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
    sid = replies[1]["result"]["sessionId"]
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                                 "params": {**prompt, "sessionId": sid}}) + "\n")  # fmt: skip
    proc.stdin.close()
    out = proc.stdout.read()  # until the server closes it
    assert proc.wait(timeout=60) == 0
    err = proc.stderr.read() if proc.stderr else ""
    answer = next(json.loads(line) for line in out.splitlines() if '"id": 2' in line
                  or '"id":2' in line)  # fmt: skip
    assert answer["result"]["stopReason"] == "cancelled", answer
    assert "Traceback" not in err


def test_regular_files_as_stdio_answer_every_request(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    requests = tmp_path / "requests.jsonl"
    requests.write_text(
        frame(0, "initialize", {"protocolVersion": 1})
        + "\n"
        + frame(1, "session/new", {"cwd": str(root), "mcpServers": []})
        + "\n"
    )
    out = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        (tmp_path / "script.json").write_text("[]")
        env = {"KILN_HOME": str(kiln_home), "KILN_PROVIDER": "scripted"}
        env["KILN_SCRIPT"] = str(tmp_path / "script.json")
        code = subprocess.run(
            KILN_ACP, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, env=env, timeout=60
        ).returncode
    assert code == 0
    frames = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(f["jsonrpc"] == "2.0" for f in frames)  # only protocol frames on stdout
    replies = {f["id"]: f for f in frames if "id" in f}
    assert set(replies) == {0, 1}
    assert replies[1]["result"]["sessionId"]
    told = [f["params"]["update"]["sessionUpdate"] for f in frames if "id" not in f]
    assert told == ["available_commands_update"]  # the session's slash commands


async def test_auto_edit_mode_applies_edits_without_asking(spawn, workspace: Path) -> None:
    client = EditorClient(answer="reject_once")
    script = [
        {"tool_calls": [{"name": "write_file", "input": {"path": "new.txt", "content": "hi\n"}}]},
        "Written.",
    ]
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        await agent.conn.set_session_mode(session_id=sid, mode_id="auto-edit")
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
        assert result.stop_reason == "end_turn"
    assert client.permissions == []
    assert client.writes == [(str(workspace / "new.txt"), "hi\n")]


async def test_sigterm_gives_running_turns_no_grace(spawn, workspace: Path) -> None:
    """docs/acp.md: SIGTERM cancels running turns without the two seconds a closed stdin gets.
    The SDK's listener swallows its cancellation, so SIGTERM looked like a hang-up and the
    turn ran on: here the model's reply, due one second later, would have ended it."""
    client = EditorClient()
    script = [
        {"tool_calls": [{"name": "todo_write", "input": {"items": [{"id": "1", "content": "x", "status": "pending"}]}}]},
        {"text": "Finished within the grace period.", "delay": 1},
    ]  # fmt: skip
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        turn = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "plan, then reply"}])
        )
        await client.wait_for(lambda u: u["sessionUpdate"] == "plan")
        agent.process.send_signal(signal.SIGTERM)
        result = await asyncio.wait_for(turn, 60)
        assert result.stop_reason == "cancelled"
        assert "Finished" not in client.text()
        assert await asyncio.wait_for(agent.process.wait(), 60) == 0


@pytest.mark.slow
async def test_sigterm_mid_turn_answers_cancelled_and_keeps_the_session(
    spawn, workspace: Path
) -> None:
    client = EditorClient()
    script = [
        {"tool_calls": [{"name": "todo_write", "input": {"items": [{"id": "1", "content": "x", "status": "pending"}]}}]},
        {"sleep": 60},
        "never",
    ]  # fmt: skip
    async with spawn(script, client) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        turn = asyncio.ensure_future(
            agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "plan then wait"}])
        )
        await client.wait_for(lambda u: u["sessionUpdate"] == "plan")
        agent.process.send_signal(signal.SIGTERM)
        result = await asyncio.wait_for(turn, 60)
        assert result.stop_reason == "cancelled"
        assert await asyncio.wait_for(agent.process.wait(), 60) == 0

    again = EditorClient()
    async with spawn(["Resumed."], again) as agent:
        await agent.start()
        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
        assert [k for k in again.kinds() if k != "available_commands_update"] == [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "plan",  # the plan the killed turn wrote, replayed as it stands
        ]
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go on"}])
        assert result.stop_reason == "end_turn" and again.text() == "Resumed."


def test_stray_stdout_writes_do_not_reach_the_protocol(tmp_path: Path, kiln_home: Path) -> None:
    """A library printing to stdout after startup lands on stderr, not in the JSON-RPC stream."""
    code = (
        "import asyncio, os\n"
        "from lsp_server.acp import process as server\n"
        "streams = server.protocol_streams\n"
        "async def noisy(*args):\n"
        "    pair = await streams(*args)\n"
        "    print('STRAY', flush=True); os.write(1, b'RAW\\n')\n"
        "    return pair\n"
        "server.protocol_streams = noisy\n"
        "asyncio.run(server.serve_stdio())\n"
    )
    env = {"KILN_HOME": str(kiln_home), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    out, err = proc.communicate(frame(0, "initialize", {"protocolVersion": 1}) + "\n", timeout=60)
    assert proc.returncode == 0
    assert [json.loads(line)["id"] for line in out.splitlines()] == [0]
    assert "STRAY" in err and "RAW" in err


def test_a_bad_setting_is_one_line_and_exit_2(kiln_home: Path) -> None:
    env = {"KILN_HOME": str(kiln_home), "KILN_ACP_MODE": "reckless"}
    done = subprocess.run(
        KILN_ACP, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "kiln: bad KILN_ACP_MODE: unknown mode 'reckless' (use one of: ask, auto-edit, ci, yolo)"
    ]


def test_the_module_entry_reads_its_arguments_as_kiln_acp_does(kiln_home: Path) -> None:
    """docs/acp.md: `python -m lsp_server.acp` is `kiln acp`. It ignored its arguments and
    served (`--bogus` was exit 0); it now refuses one as `kiln acp` does, and serves without."""
    env = {"KILN_HOME": str(kiln_home), "PATH": "/usr/bin:/bin", "KILN_PROVIDER": "scripted",
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}  # fmt: skip
    module = [sys.executable, "-m", "lsp_server.acp"]
    for argv in (KILN_ACP, module):
        done = subprocess.run([*argv, "--bogus"], stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, env=env, timeout=60)  # fmt: skip
        assert (done.returncode, done.stdout) == (2, ""), (argv, done)
        assert done.stderr.strip().splitlines() == ["kiln: No such option '--bogus'."], done
    init = frame(1, "initialize", {"protocolVersion": 1}) + "\n"
    done = subprocess.run(module, input=init, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout)["result"]["protocolVersion"] == 1


def test_a_bad_mcp_timeout_is_one_line_and_exit_2(kiln_home: Path) -> None:
    must = "mcpStartTimeout must be a positive number of seconds, at most 600, got"
    for value, line in (("soon", f"{must} 'soon'"), ("-1", f"{must} '-1'")):
        env = {"KILN_HOME": str(kiln_home), "KILN_ACP_MCP_TIMEOUT": value}
        done = subprocess.run(
            KILN_ACP, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60
        )
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr.strip().splitlines() == [f"kiln: bad KILN_ACP_MCP_TIMEOUT: {line}"]


def test_a_bad_log_level_is_one_line_and_exit_2(kiln_home: Path) -> None:
    env = {"KILN_HOME": str(kiln_home), "KILN_LOG_LEVEL": "loud"}
    done = subprocess.run(
        KILN_ACP, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip().splitlines() == [
        "kiln: bad KILN_LOG_LEVEL 'loud' (use one of: debug, info, warning, error, critical)"
    ]


async def test_a_second_initialize_is_rejected_and_text_is_batched(spawn, workspace: Path) -> None:
    from acp import RequestError

    client = EditorClient(buffers={str(workspace / "notes.txt"): "the client's unsaved notes\n"})
    answer = "".join(f"word{i:03d} " for i in range(52))  # 416 characters, 26 model deltas
    script = [
        {"tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
        {"match": "unsaved notes", "text": answer},
    ]
    async with spawn(script, client) as agent:
        await agent.start(fs=True)
        try:
            await agent.start(fs=False)  # would send edits straight to the disk
            raise AssertionError("a second initialize was accepted")
        except RequestError as exc:
            assert exc.code == -32600
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
        assert result.stop_reason == "end_turn"
    assert client.reads == [str(workspace / "notes.txt")]  # still the first capabilities
    chunks = [u for u in client.updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(c["content"]["text"] for c in chunks) == answer  # all of it, before the answer
    assert len(chunks) < 26 // 2  # coalesced, not one notification per model delta


async def test_kiln_options_in_meta_of_initialize_and_session_new(spawn, workspace: Path) -> None:
    """docs/acp.md: `_meta.kiln` of `initialize` sets server-wide defaults, of `session/new`
    that session's."""
    from acp import PROTOCOL_VERSION

    client = EditorClient()
    async with spawn(["ok"], client) as agent:
        await agent.conn.initialize(protocol_version=PROTOCOL_VERSION, kiln={"mode": "auto-edit"})
        first = await agent.conn.new_session(cwd=str(workspace))
        second = await agent.conn.new_session(cwd=str(workspace), kiln={"mode": "yolo"})
    assert first.modes is not None and first.modes.current_mode_id == "auto-edit"
    assert second.modes is not None and second.modes.current_mode_id == "yolo"


@pytest.mark.parametrize("server", ["acp", "lsp"])
def test_stdin_from_dev_null_ends_at_once(tmp_path: Path, kiln_home: Path, server: str) -> None:
    """`kiln acp </dev/null` (and `kiln lsp`) printed an asyncio traceback (epoll refuses
    /dev/null) and then waited forever for input that could never come; stdin at its end is
    now the end of the session, as for a pipe or a file: exit 0, no traceback."""
    with open(os.devnull, "rb") as stdin:
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", server], stdin=stdin, capture_output=True,
            env={**os.environ, "KILN_HOME": str(kiln_home)}, cwd=tmp_path, timeout=60,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr and proc.stdout == b"", proc.stderr


def test_a_client_gone_before_its_answers_is_an_ordinary_end(kiln_home: Path) -> None:
    """docs/acp.md: when the client closes stdin the process exits 0. One that also closed its
    end of stdout (an editor that crashed) got two SDK tracebacks, "kiln: Connection lost" and
    exit 1, since the answers could not be written; now nothing is logged at the default level."""
    env = {"KILN_HOME": str(kiln_home), "PATH": "/usr/bin:/bin",
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}  # fmt: skip
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read the answers
    try:
        lines = frame(1, "initialize", {"protocolVersion": 1}) + "\n" + frame(2, "session/list", {})
        done = subprocess.run(KILN_ACP, input=lines + "\n", stdout=write_end,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=60)  # fmt: skip
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
