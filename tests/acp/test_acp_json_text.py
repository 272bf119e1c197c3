"""`kiln acp` reads a client's lines as JSON: NaN, Infinity and 1e400 are parse errors, and a
lone UTF-16 surrogate escape is read as U+FFFD (lsp_server/json_text.py, docs/acp.md)."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import KILN_ACP
from tests.acp.test_acp_lifecycle import frame, run_raw

pytestmark = pytest.mark.e2e


def test_numbers_json_has_not_are_parse_errors(kiln_home: Path) -> None:
    done = run_raw(
        [
            frame(1, "initialize", {"protocolVersion": 1}),
            '{"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {"cursor": NaN}}',
            '{"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {"x": Infinity}}',
            '{"jsonrpc": "2.0", "id": 4, "method": "session/list", "params": {"x": -1e400}}',
            frame(5, "session/list", {}),
        ],
        kiln_home,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    nulls = [r["error"]["code"] for r in replies if r["id"] is None]
    assert nulls == [-32700] * 3, replies
    assert [r["id"] for r in replies if r["id"] is not None] == [1, 5], replies


def test_a_prompt_holding_a_lone_surrogate_is_stored_and_listed(
    kiln_home: Path, tmp_path: Path
) -> None:
    """The session's title (the prompt's first words) held the surrogate, and storing it
    failed in SQLite's encoder: an internal error, and the turn never ran."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "done"}]), encoding="utf-8")
    env = {"KILN_HOME": str(kiln_home), "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}
    proc = subprocess.Popen(
        KILN_ACP, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={"PATH": "/usr/bin:/bin", **env},
    )  # fmt: skip
    killer = threading.Timer(60, proc.kill)  # only fires when something is wrong
    killer.start()
    assert proc.stdin is not None and proc.stdout is not None

    def answer(line: str, msg_id: int) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        for out in proc.stdout:
            message = json.loads(out)
            if message.get("id") == msg_id and "method" not in message:
                return dict(message)
        raise AssertionError(f"no answer to {msg_id}")

    try:
        answer(frame(1, "initialize", {"protocolVersion": 1}), 1)
        new = answer(frame(2, "session/new", {"cwd": str(workspace), "mcpServers": []}), 2)
        sid = new["result"]["sessionId"]
        params = json.dumps({"sessionId": sid, "prompt": [{"type": "text", "text": "fix X"}]})
        prompt = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt"})
        prompt = prompt[:-1] + ', "params": ' + params.replace("X", "\\ud800 the bug") + "}"
        assert answer(prompt, 3)["result"]["stopReason"] == "end_turn"
        sessions = answer(frame(4, "session/list", {}), 4)["result"]["sessions"]
        assert [s["title"] for s in sessions] == ["fix \ufffd the bug"]
        proc.stdin.close()
        assert proc.wait(30) == 0
    finally:
        killer.cancel()
        proc.kill()
    stderr = proc.stderr.read() if proc.stderr else ""
    assert "Traceback" not in stderr, stderr


def test_a_line_that_is_not_utf_8_is_a_parse_error(kiln_home: Path) -> None:
    """JSON between systems is UTF-8 (RFC 8259) and so is ACP's: Python's parser guessed the
    encoding of bytes, so a request in UTF-16 (here the last line, which has no new line to
    split in half) was served. A UTF-8 byte order mark is still ignored."""
    request = '{"jsonrpc": "2.0", "id": %d, "method": "session/list", "params": {}}'
    data = (
        (frame(1, "initialize", {"protocolVersion": 1}) + "\n").encode()
        + b"\xef\xbb\xbf" + (request % 2 + "\n").encode()
        + b"\xff\xfe" + (request % 3).encode("utf-16-le")
    )  # fmt: skip
    env = {"KILN_HOME": str(kiln_home), "PATH": "/usr/bin:/bin", "KILN_PROVIDER": "scripted"}
    done = subprocess.run(KILN_ACP, input=data, capture_output=True, env=env, timeout=60)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert sorted(replies, key=str) == [1, 2, None], replies  # the UTF-16 request not served
    assert replies[2]["result"] == {"sessions": []}
    assert replies[None]["error"]["code"] == -32700, replies
    assert "utf-8" in replies[None]["error"]["data"]["details"], replies
