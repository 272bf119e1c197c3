"""What `kiln acp` asks of a client and how it names its files, through the real process over
raw frames (the client answers every agent request itself, so each one is on record)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from asyncio.subprocess import PIPE
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import KILN_ACP

pytestmark = pytest.mark.e2e

READ_THEN_EDIT = {"tool_calls": [
    {"name": "read_file", "input": {"path": "app.py"}},
    {"name": "edit_file", "input": {"path": "app.py", "old_text": "'hello'", "new_text": "'hi'"}},
    {"name": "write_file", "input": {"path": "new.txt", "content": "from the agent\n"}},
]}  # fmt: skip


@dataclass
class Seen:
    requests: list[dict[str, Any]] = field(default_factory=list)  # the agent's, answered
    updates: list[dict[str, Any]] = field(default_factory=list)
    answer: dict[str, Any] = field(default_factory=dict)  # the prompt's
    listed: list[dict[str, Any]] = field(default_factory=list)  # session/list for the cwd


async def one_turn(
    kiln_home: Path, tmp_path: Path, cwd: Path, caps: dict[str, Any], files: dict[str, str]
) -> Seen:
    """Initialize with ``caps``, a yolo session in ``cwd``, one prompt running READ_THEN_EDIT.
    ``fs/read_text_file`` is answered from ``files`` (by the path asked), writes are accepted."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps([READ_THEN_EDIT, "Done."]), encoding="utf-8")
    env = {"KILN_HOME": str(kiln_home), "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script),
           "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "PATH": os.environ["PATH"]}  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *KILN_ACP, stdin=PIPE, stdout=PIPE, stderr=PIPE, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    seen = Seen()

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())  # type: ignore[union-attr]

    async def call(msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        send({"id": msg_id, "method": method, "params": params})
        while True:
            line = await asyncio.wait_for(proc.stdout.readline(), 60)  # type: ignore[union-attr]
            assert line, "kiln acp closed its output"
            message = json.loads(line)
            if message.get("method") == "session/update":
                seen.updates.append(message["params"]["update"])
            elif "method" in message and "id" in message:
                seen.requests.append(message)
                path = message["params"].get("path")
                if message["method"] == "fs/read_text_file" and path in files:
                    send({"id": message["id"], "result": {"content": files[path]}})
                elif message["method"] == "fs/write_text_file":
                    send({"id": message["id"], "result": {}})
                else:
                    error = {"code": -32002, "message": "Resource not found"}
                    send({"id": message["id"], "error": error})
            elif message.get("id") == msg_id:
                return message

    try:
        init = await call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        assert init["result"]["protocolVersion"] == 1, init
        yolo = {"kiln": {"mode": "yolo"}}
        new = await call(2, "session/new", {"cwd": str(cwd), "mcpServers": [], "_meta": yolo})
        prompt = [{"type": "text", "text": "go"}]
        params = {"sessionId": new["result"]["sessionId"], "prompt": prompt}
        seen.answer = await call(3, "session/prompt", params)
        seen.listed = (await call(4, "session/list", {"cwd": str(cwd)}))["result"]["sessions"]
    finally:
        proc.stdin.close()
        stderr = await asyncio.wait_for(proc.stderr.read(), 60)
        await asyncio.wait_for(proc.wait(), 60)
    assert b"Traceback" not in stderr, stderr.decode(errors="replace")
    return seen


async def test_flags_that_are_not_booleans_advertise_nothing(
    workspace: Path, kiln_home: Path, tmp_path: Path
) -> None:
    """ACP's schema reads a capability flag that is not a boolean as its default, false
    (``x-deserialize-default-on-error``), as the official SDKs do; the Python SDK turned ``1``,
    ``"yes"`` and ``"true"`` into true, so Kiln sent ``fs/*`` requests to a client that had
    not advertised them."""
    caps = {"fs": {"readTextFile": 1, "writeTextFile": "true"}, "terminal": "yes"}
    seen = await one_turn(kiln_home, tmp_path, workspace, caps, files={})
    assert seen.answer["result"] == {"stopReason": "end_turn"}, seen.answer
    assert [r["method"] for r in seen.requests] == []
    assert (workspace / "new.txt").read_text() == "from the agent\n"  # written on the disk


async def test_files_are_named_under_the_cwd_the_client_sent(
    workspace: Path, kiln_home: Path, tmp_path: Path
) -> None:
    """A client that opened its project through a symbolic link (on macOS: anything under /tmp
    or /var) was asked to read and write, and shown locations and diffs of, files under the
    link's target: outside the folder it opened, so its unsaved buffers were missed; and
    `session/list` for its folder answered sessions in another one."""
    link = tmp_path / "linked"
    link.symlink_to(workspace, target_is_directory=True)
    app = str(link / "app.py")
    caps = {"fs": {"readTextFile": True, "writeTextFile": True}}
    buffer = "def greet():\n    return 'hello'  # unsaved\n"
    seen = await one_turn(kiln_home, tmp_path, link, caps, files={app: buffer})
    assert seen.answer["result"] == {"stopReason": "end_turn"}, seen.answer
    asked = {(r["method"], r["params"]["path"]) for r in seen.requests}
    assert asked == {
        ("fs/read_text_file", app),
        ("fs/read_text_file", str(link / "new.txt")),
        ("fs/write_text_file", app),
        ("fs/write_text_file", str(link / "new.txt")),
    }, asked
    shown = [
        item["path"]
        for u in seen.updates
        if u["sessionUpdate"] in ("tool_call", "tool_call_update")
        for item in (u.get("locations") or []) + (u.get("content") or [])
        if "path" in item
    ]
    assert shown and all(p.startswith(str(link) + "/") for p in shown), shown
    assert [s["cwd"] for s in seen.listed] == [str(link)]
    [write] = [r for r in seen.requests if r["params"]["path"] == app and "content" in r["params"]]
    assert write["params"]["content"] == buffer.replace("'hello'", "'hi'")  # from the buffer


def test_capabilities_of_the_wrong_shape_are_read_as_none_without_noise(kiln_home: Path) -> None:
    """`clientCapabilities: 5` or `fs: 5` are read as no capability, as ACP's schema reads
    them; checking them printed pydantic's three-line serializer warning to stderr."""
    for caps in (5, {"fs": 5}, {"fs": {"readTextFile": "yes"}, "terminal": []}):
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": caps}}  # fmt: skip
        env = {"KILN_HOME": str(kiln_home), "PATH": "/usr/bin:/bin",
               "PYTHONPATH": os.environ.get("PYTHONPATH", "")}  # fmt: skip
        done = subprocess.run(KILN_ACP, input=json.dumps(init) + "\n", capture_output=True,
                              text=True, env=env, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["result"]["protocolVersion"] == 1, done.stdout
        assert done.stderr == "", (caps, done.stderr)  # warnings and above only: none
