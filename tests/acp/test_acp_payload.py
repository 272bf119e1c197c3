"""Lines a hostile client sends that are no message Kiln can read
(``lsp_server/acp/payload.py``, ``lsp_server/json_text.py``; docs/acp.md, errors table), through
the real `kiln acp`.

- more than 100,000 JSON values: -32600 under the request's id, before anything parses or copies
  it (a 50 MB line of ``{}`` took gigabytes);
- half a surrogate pair sent as raw bytes (which Python's parser reads as a surrogate, where
  only ``\ud800`` escapes were read as U+FFFD) failed at encode time as an internal error;
- a fractional ``protocolVersion`` (``1.5`` was read as 1) and a ``maxSteps`` of ``1e30``;
- an unreadable answer to one of Kiln's own requests fails that request at once, instead of
  leaving the turn waiting for the permission timeout, wherever its ``id`` stands;
- error answers are all written, in order, even to a client that reads them late.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from asyncio.subprocess import PIPE
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import KILN_ACP
from tests.acp.test_acp_lifecycle import frame, run_raw

pytestmark = pytest.mark.e2e


def _replies(done: subprocess.CompletedProcess[str]) -> dict[Any, dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return {r["id"]: r for r in map(json.loads, done.stdout.splitlines()) if "id" in r}


def test_a_message_of_too_many_values_is_refused_under_its_id(kiln_home: Path) -> None:
    values = ",".join(["0"] * 100_001)
    empties = ",".join(["{}"] * 60_000)  # 60,001 values: under the limit
    answer = ",".join(["1"] * 100_001)
    raw = [
        frame(1, "initialize", {"protocolVersion": 1}),
        '{"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {"x": [' + values + "]}}",
        '{"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {"_meta": [' + empties + "]}}",
        '{"params": {"x": [' + values + ']}, "jsonrpc": "2.0", "id": 4, "method": "session/list"}',
        '{"jsonrpc": "2.0", "id": 0, "result": [' + answer + "]}",  # to no request: no reply
        frame(5, "session/list", {}),
    ]  # fmt: skip
    done = run_raw(raw, kiln_home)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(str(r["id"]) for r in replies) == ["1", "2", "3", "4", "5"], replies
    by_id = {r["id"]: r for r in replies}
    too_many = by_id[2]["error"]
    assert too_many["code"] == -32600, too_many
    assert too_many["data"]["details"] == (
        "a message may hold at most 100,000 JSON values; this one holds 100,007"
    )
    assert by_id[3]["result"] == {"sessions": []}  # big but under the limit: served
    assert by_id[4]["error"]["code"] == -32600  # its id after its params: found by the scan
    assert by_id[5]["result"] == {"sessions": []}


async def test_half_a_surrogate_pair_sent_as_bytes_reads_as_the_replacement_character(
    kiln_home: Path, workspace: Path
) -> None:
    """``\ud800`` escapes were read as U+FFFD, but the same surrogate sent as its three raw
    bytes (ED A0 80: not UTF-8, yet Python's parser reads bytes with "surrogatepass") reached
    the handlers as a surrogate: a prompt failed as SQLite stored the session's title, and a
    `cwd` inside `os.path.realpath` (-32603 with a traceback). Read as U+FFFD, the prompt runs
    and its session is listed; the `cwd` is a folder that does not exist."""
    script = kiln_home / "script.json"
    script.write_text(json.dumps(["Fine."]), encoding="utf-8")
    env = {"KILN_HOME": str(kiln_home), "PATH": "/usr/bin:/bin", "KILN_PROVIDER": "scripted",
           "KILN_SCRIPT": str(script)}  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *KILN_ACP, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=env
    )
    agent = _Raw(proc)
    try:
        agent.send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        agent.send('{"jsonrpc": "2.0", "id": 2, "method": "session/new", '
                   f'"params": {{"cwd": "{workspace}/\ud800", "mcpServers": []}}}}')  # fmt: skip
        agent.send({"id": 3, "method": "session/new",
                    "params": {"cwd": str(workspace), "mcpServers": []}})  # fmt: skip
        sid = (await agent.until(lambda m: m.get("id") == 3))["result"]["sessionId"]
        agent.send('{"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": '
                   f'{{"sessionId": "{sid}", "prompt": [{{"type": "text", "text": '
                   '"fix \ud83d\ude00 and \ud800 now"}]}}')  # fmt: skip
        done = await agent.until(lambda m: m.get("id") == 4)
        assert done.get("result", {}).get("stopReason") == "end_turn", done
        agent.send({"id": 5, "method": "session/list", "params": {}})
        listed = (await agent.until(lambda m: m.get("id") == 5))["result"]["sessions"]
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 60)
    refused = next(m for m in agent.seen if m.get("id") == 2)["error"]
    assert refused["code"] == -32602 and "is not a directory" in refused["message"], refused
    assert "\ufffd" in refused["message"], refused
    assert [s["title"] for s in listed] == ["fix \ufffd\ufffd and \ufffd now"]
    assert proc.stderr is not None
    assert "Traceback" not in (await proc.stderr.read()).decode()


def test_a_fractional_protocol_version_and_a_limit_no_turn_reaches_are_refused(
    kiln_home: Path, workspace: Path
) -> None:
    """`"protocolVersion": 1.5` was read as 1 and answered; `maxSteps` of `1e30` made a
    session without a step limit, `2.5` one of 2; infinity was a -32603 traceback."""
    raw = [frame(1, "initialize", {"protocolVersion": 1.5}),
           frame(2, "initialize", {"protocolVersion": 1.0})]  # fmt: skip
    for n, steps in enumerate((1e30, 2.5, 10_001, 0, True, "many", 10**400), start=3):
        options = {"_meta": {"kiln": {"maxSteps": steps}}}
        raw.append(frame(n, "session/new", {"cwd": str(workspace), "mcpServers": [], **options}))
    replies = _replies(run_raw(raw, kiln_home))
    assert replies[1]["error"]["code"] == -32602, replies[1]
    assert replies[1]["error"]["message"] == (
        "invalid params: protocolVersion: Input should be a whole number, not a fraction"
    )
    assert replies[2]["result"]["protocolVersion"] == 1  # 1.0 is the integer 1
    for n in range(3, 10):
        error = replies[n]["error"]
        assert error["code"] == -32602 and "maxSteps must be" in error["message"], error
        assert len(error["message"]) < 100, error
    assert "from 1 to 10,000" in replies[3]["error"]["message"]
    assert "whole number" in replies[4]["error"]["message"]


def test_a_protocol_version_of_null_an_array_or_an_object_is_refused(kiln_home: Path) -> None:
    """The SDK read `"protocolVersion": null` (or `[1]`, `{}`) as 1 and answered; it is the
    wrong type, as a string is."""
    raw = [frame(n, "initialize", {"protocolVersion": bad})
           for n, bad in enumerate((None, [1], {}), start=1)]  # fmt: skip
    raw.append(frame(4, "initialize", {"protocolVersion": 1}))
    replies = _replies(run_raw(raw, kiln_home))
    for n, shape in ((1, "null"), (2, "an array"), (3, "an object")):
        error = replies[n]["error"]
        assert (error["code"], error["message"]) == (
            -32602, f"invalid params: protocolVersion: Input should be a number, not {shape}"
        ), error  # fmt: skip
    assert replies[4]["result"]["protocolVersion"] == 1  # none of them was a handshake


class _Raw:
    """`kiln acp` driven line by line, playing a client that answers Kiln's requests itself."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.seen: list[dict[str, Any]] = []

    async def until(self, predicate: Any, timeout: float = 60) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while not (hit := next((m for m in self.seen if _is_frame(m) and predicate(m)), None)):
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
            assert line, self.seen
            self.seen.append(json.loads(line))
        return hit

    def send(self, line: str | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        text = line if isinstance(line, str) else json.dumps({"jsonrpc": "2.0", **line})
        self.proc.stdin.write(text.encode("utf-8", "surrogatepass") + b"\n")

    def thoughts(self) -> str:
        return "".join(
            m["params"]["update"]["content"]["text"]
            for m in self.seen
            if _is_frame(m)
            and m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] == "agent_thought_chunk"
        )


def _is_frame(message: Any) -> bool:
    return isinstance(message, dict)  # an array is the answer to a batch


UNREADABLE = {
    "nan": '{"jsonrpc": "2.0", "id": %s, "result": {"outcome": {"outcome": "cancelled"}, "x": NaN}}',
    "1e400": '{"jsonrpc": "2.0", "id": %s, "result": {"outcome": {"outcome": "cancelled"}, "x": 1e400}}',
    "not json": '{"jsonrpc": "2.0", "id": %s, "result": {"outcome": ',
    "too deep": '{"jsonrpc": "2.0", "id": %s, "result": ' + "[" * 5000 + "]" * 5000 + "}",
    "too many": '{"jsonrpc": "2.0", "id": %s, "result": [' + ",".join(["1"] * 100_001) + "]}",
    # the id after the result, past the 4,096 bytes read first; an "id" nested in the result
    # and one inside a string are not the answer's
    "too many, id last": '{"jsonrpc": "2.0", "result": {"outcome": {"id": 0}, "x": ['
                         + ",".join(['"a\\"}, \\"id\\": 0"'] * 100_001) + "]}, \"id\": %s}",
    "nan, id last": '{"jsonrpc": "2.0", "result": {"x": NaN, "pad": "' + "p" * 8192 + '"}, "id": %s}',
    # a "yes" that breaks JSON-RPC 2.0: the SDK read it as the result, and the command ran
    "result and error": '{"jsonrpc": "2.0", "id": %s, "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}, "error": {"code": -32000, "message": "no"}}',
    "no jsonrpc member": '{"id": %s, "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}',
    # an error that is no error object: the SDK's reading loop crashed, ending the connection
    "error not an object": '{"jsonrpc": "2.0", "id": %s, "error": 5}',
    "error of wrong types": '{"jsonrpc": "2.0", "id": %s, "error": {"code": "x", "message": 5}}',
    # a well-formed answer, but in a batch (ACP v1 sends one message per line): it was answered
    # with an error of its own (`id: null`) and its request waited for the timeout
    "in a batch": '[{"jsonrpc": "2.0", "id": %s, "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}]',
}  # fmt: skip


@pytest.mark.parametrize("kind", list(UNREADABLE))
async def test_an_unreadable_answer_fails_the_request_at_once(
    kind: str, kiln_home: Path, tmp_path: Path, workspace: Path
) -> None:
    """The permission question waited for its timeout (120 s by default, 600 here) when the
    client's answer could not be read: the answer was refused as a malformed request (with
    `id: null`) and nothing reached the request waiting for it. Now the question fails at once, the turn goes on (the
    command does not run) and the model reads that the request failed; the answer gets no
    reply of its own. A file read answered that way falls back to the disk at once."""
    script = tmp_path / "script.json"
    run = {"tool_calls": [{"name": "run_command", "input": {"command": "touch ran"}}]}
    read = {"tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]}
    script.write_text(json.dumps([run, read, "done"]), encoding="utf-8")
    env = {"KILN_HOME": str(kiln_home), "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "KILN_ACP_PERMISSION_TIMEOUT": "600", "PATH": os.environ["PATH"],
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *KILN_ACP, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=env, limit=2**24
    )
    agent = _Raw(proc)
    caps = {"fs": {"readTextFile": True, "writeTextFile": False}}
    try:
        agent.send({"id": 1, "method": "initialize",
                    "params": {"protocolVersion": 1, "clientCapabilities": caps}})  # fmt: skip
        agent.send({"id": 2, "method": "session/new",
                    "params": {"cwd": str(workspace), "mcpServers": []}})  # fmt: skip
        sid = (await agent.until(lambda m: m.get("id") == 2))["result"]["sessionId"]
        prompt = [{"type": "text", "text": "go"}]
        agent.send({"id": 3, "method": "session/prompt",
                    "params": {"sessionId": sid, "prompt": prompt}})  # fmt: skip
        started = time.monotonic()
        asked = await agent.until(lambda m: m.get("method") == "session/request_permission")
        agent.send(UNREADABLE[kind] % json.dumps(asked["id"]))
        fs_read = await agent.until(lambda m: m.get("method") == "fs/read_text_file")
        agent.send(UNREADABLE[kind] % json.dumps(fs_read["id"]))
        done = await agent.until(lambda m: m.get("id") == 3)
        assert done["result"]["stopReason"] == "end_turn", done
        assert time.monotonic() - started < 60  # not the permission timeout
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 60)
    assert not (workspace / "ran").exists()
    assert "the permission request failed" in agent.thoughts(), agent.thoughts()
    results = [m for m in agent.seen if _is_frame(m) and m.get("method") == "session/update"
               and m["params"]["update"].get("status") == "completed"]  # fmt: skip
    assert "disk text of the notes" in json.dumps(results)  # read from the disk instead
    replies = [m for m in agent.seen if not _is_frame(m) or "error" in m]
    assert not replies, replies  # the answers got no reply
    assert proc.stderr is not None
    logged = (await proc.stderr.read()).decode()
    assert "Traceback" not in logged and "an unreadable answer to request" in logged, logged


def test_error_answers_all_reach_a_client_that_reads_late(kiln_home: Path) -> None:
    """The answers the guard writes itself went out without waiting for the pipe: a client
    that closed its input and read a little later got 416 of 5,000 errors, the process having
    exited with the rest unwritten. The guard now waits while the client is behind, and the
    process exits only once everything written has been read (or nothing is for 10 s)."""
    count = 5_000
    data = b"".join(
        b'{"jsonrpc": "2.0", "id": %d, "method": "session/list", "params": {"cursor": 5}}\n' % i
        for i in range(count)
    )
    env = {"KILN_HOME": str(kiln_home), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(KILN_ACP, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(data)  # taken whole: the server reads ahead of what it has answered
    proc.stdin.close()
    # The client reads nothing yet. The server must not end (before, it exited within a
    # second, the answers that did not fit in the pipe unwritten): a non-event, so a bound.
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=3)
    ids = [json.loads(line)["id"] for line in proc.stdout.read().splitlines()]
    assert proc.wait(60) == 0
    assert ids == list(range(count))  # all of them, in the order the lines came
