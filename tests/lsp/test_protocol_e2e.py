"""Bad requests get JSON-RPC errors and the server keeps serving; the index follows the buffers."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from lsprotocol import types

from indexer import Index
from lsp_server.core import (
    INVALID_PARAMS,
    NOT_ALLOWED,
    NOT_AVAILABLE,
    SESSION_NOT_FOUND,
    TURN_IN_PROGRESS,
)
from tests.lsp.conftest import running, server_env
from tests.lsp.test_index_locked_e2e import _hold_write_lock
from tests.waiting import answer_when, until

pytestmark = pytest.mark.e2e


async def _error(editor: object, method: str, params: object) -> tuple[int, str, object]:
    try:
        await editor.request(method, params)  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - the JSON-RPC error is the point
        return getattr(exc, "code", None), str(exc), getattr(exc, "data", None)  # type: ignore[return-value]
    raise AssertionError(f"{method} {params!r} succeeded")


async def test_errors_are_json_rpc_errors_and_the_server_survives(
    workspace: Path, scripted_env: object, tmp_path: Path
) -> None:
    release = tmp_path / "release"  # the second turn's model answers once this file exists
    steps = [
        {"match": "secret-unsaved-line", "text": "saw the selection"},
        {"wait_for": str(release)},
        "slow",
    ]
    async with running(workspace, scripted_env(steps)) as editor:  # type: ignore[operator]
        # A reference with a range carries just those lines of the unsaved buffer.
        uri = editor.open(workspace / "app.py", (workspace / "app.py").read_text())
        editor.type_text(uri, "line0\nsecret-unsaved-line\nline2\n")
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        prompt = [
            {"type": "text", "text": "explain this"},
            {
                "type": "resource_link",
                "uri": uri,
                "name": "app.py",
                "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 5}},
            },
        ]
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": prompt})
        chunks = editor.updates_for(sid, "agent_message_chunk")
        assert "".join(c["content"]["text"] for c in chunks) == "saw the selection"

        code, message, data = await _error(
            editor, "kiln/session/prompt", {"sessionId": "nope", "prompt": "hi"}
        )
        assert code == SESSION_NOT_FOUND and "nope" in message and data["hint"]
        code, _, _ = await _error(
            editor, "kiln/session/load", {"sessionId": "20200101-000000-deadbeef"}
        )
        assert code == SESSION_NOT_FOUND
        code, message, _ = await _error(editor, "kiln/session/prompt", {"prompt": "hi"})
        assert code == INVALID_PARAMS and "sessionId" in message
        code, _, _ = await _error(editor, "kiln/session/new", ["not", "an", "object"])
        assert code == INVALID_PARAMS
        code, message, _ = await _error(editor, "kiln/session/new", {"mode": "godmode"})
        assert code == INVALID_PARAMS and "godmode" in message
        for bad in ({"maxSteps": 0}, {"maxSteps": -3}, {"permissionTimeout": -5},
                    {"permissionTimeout": "nan"}):  # fmt: skip
            code, message, _ = await _error(editor, "kiln/session/new", bad)
            assert code == INVALID_PARAMS and next(iter(bad)) in message, (bad, message)
        code, _, _ = await _error(editor, "kiln/session/new", {"cwd": "/"})
        assert code == NOT_ALLOWED  # outside the workspace
        code, _, _ = await _error(
            editor, "kiln/edit/resolve", {"proposalId": "x", "decision": "maybe"}
        )
        assert code == INVALID_PARAMS
        code, _, _ = await _error(
            editor, "kiln/edit/resolve", {"proposalId": "x", "decision": "accept"}
        )
        assert code == NOT_ALLOWED
        code, _, _ = await _error(editor, "kiln/no/such/method", {})
        assert code == -32601

        code, _, _ = await _error(
            editor, "kiln/session/prompt", {"sessionId": sid, "prompt": [{"type": "video"}]}
        )
        assert code == INVALID_PARAMS
        code, _, _ = await _error(
            editor,
            "kiln/session/prompt",
            {"sessionId": sid, "prompt": [{"type": "resource_link", "uri": "file:///etc/passwd"}]},
        )
        assert code == NOT_ALLOWED
        first = asyncio.ensure_future(
            editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "a"})
        )
        await editor.until_busy(sid)
        code, _, _ = await _error(editor, "kiln/session/prompt", {"sessionId": sid, "prompt": "b"})
        assert code == TURN_IN_PROGRESS
        # Notifications have no answer: bad ones are logged, nothing crashes.
        editor.notify("kiln/session/cancel", {"sessionId": "unknown"})
        editor.notify("kiln/session/cancel", ["garbage"])
        release.touch()
        assert (await first)["stopReason"] == "end_turn"
        code, _, _ = await _error(
            editor, "kiln/session/setMode", {"sessionId": sid, "mode": "root"}
        )
        assert code == INVALID_PARAMS
        modes = await editor.request(
            "kiln/session/setMode", {"sessionId": sid, "editMode": "deferred"}
        )
        assert modes == {"mode": "ask", "editMode": "deferred"}
        assert (await editor.request("kiln/hello", {}))["protocolVersion"] == 1


async def test_index_follows_buffers_and_skills_and_context_answer(
    workspace: Path, scripted_env: object
) -> None:
    skill = workspace / ".kiln" / "skills" / "greeter"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: greeter\ndescription: Says hello politely.\n---\nBe polite.\n", encoding="utf-8"
    )
    steps = [
        {
            "match": "find",
            "text": "",
            "tool_calls": [{"name": "search_code", "input": {"query": "zebrafinch total"}}],
        },
        {"match": "app.py", "text": "found it"},
        "hi",
    ]
    # The scan waits at its first write while another process holds the index's write lock, so
    # the editor grants the progress token before the scan ends: a loaded machine's editor
    # answered after this tiny workspace was scanned, and an ended scan shows no progress.
    with Index(workspace) as idx:
        idx.update()
    (workspace / "late.py").write_text("def late():\n    pass\n", encoding="utf-8")
    holder = _hold_write_lock(workspace / ".kiln" / "index.db")
    env = {**scripted_env(steps), "KILN_INDEX_BUSY_TIMEOUT": "300"}  # type: ignore[operator]
    async with running(workspace, env) as editor:
        try:
            await until(lambda: editor.progress, what="the index progress to begin")
        finally:
            holder.communicate("\n", timeout=60)
        status = await answer_when(
            lambda: editor.request("kiln/index/status", {}), lambda s: s["state"] == "ready"
        )
        assert status["state"] == "ready" and status["files"] >= 2
        kinds = [p["value"]["kind"] for p in editor.progress]
        assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
        assert any("files" in (p["value"].get("message") or "") for p in editor.progress)
        assert any("indexed" in line for line in editor.logs)

        uri = editor.open(workspace / "app.py", (workspace / "app.py").read_text())
        editor.type_text(uri, "def zebrafinch_total(a, b):\n    return a + b\n")
        hover = await answer_when(  # the buffer is re-indexed after a short debounce
            lambda: editor.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(line=0, character=6),
                )
            ),
            lambda hover: hover is not None,
        )
        assert hover is not None and "zebrafinch_total" in hover.contents.value
        assert "zebrafinch" not in (workspace / "app.py").read_text()
        # The agent's search_code sees the same (unsaved) index.
        searcher = (await editor.request("kiln/session/new", {}))["sessionId"]
        await editor.request("kiln/session/prompt", {"sessionId": searcher, "prompt": "find it"})
        ran = [u for u in editor.updates_for(searcher, "tool_call_update") if u.get("content")]
        output = ran[0]["content"][0]["content"]["text"]
        assert "app.py" in output and "zebrafinch_total" in output

        # Files changed behind the editor's back arrive as didChangeWatchedFiles.
        assert types.WORKSPACE_DID_CHANGE_WATCHED_FILES in editor.registrations
        (workspace / "extra.py").write_text("def okapi_counter():\n    return 1\n")
        editor.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(
                        uri=(workspace / "extra.py").as_uri(), type=types.FileChangeType.Created
                    )
                ]
            )
        )
        editor.type_text(uri, "okapi_counter()\n")
        hover = await answer_when(
            lambda: editor.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(line=0, character=3),
                )
            ),
            lambda hover: hover is not None and "extra.py" in hover.contents.value,
        )
        assert hover is not None and "extra.py" in hover.contents.value

        skills = await editor.request("kiln/skills/list", {})
        assert [s["name"] for s in skills["skills"]] == ["greeter"]
        assert skills["skills"][0]["scope"] == "project"
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "hello"})
        shown = await editor.request("kiln/context/show", {"sessionId": sid})
        assert shown["messages"] == 2 and shown["turns"] == 1 and "read_file" in shown["tools"]
        code, _, _ = await _error(editor, "kiln/skills/remove", {"id": "nobody/nothing"})
        assert code not in (None, -32603)
        code, _, _ = await _error(
            editor, "kiln/skills/search", {"query": "x", "registry": "http://127.0.0.1:9"}
        )
        assert code not in (None, -32603, NOT_AVAILABLE)


def test_bad_tcp_address_is_one_line_and_exit_2() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "lsp", "--tcp", "nowhere"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "kiln: --tcp expects HOST:PORT, got 'nowhere' (e.g. --tcp 127.0.0.1:2087)"
    ]


def test_stray_stdout_writes_do_not_reach_the_protocol(workspace: Path, kiln_home: Path) -> None:
    """PROTOCOL.md: fd 1 points at stderr once the protocol has its own copy, so a library
    printing after startup cannot corrupt the LSP stream."""
    import json
    import subprocess
    import sys

    code = (
        "import os, sys\n"
        "import lsp_server.stdio as stdio\n"
        "opened = stdio.open_stdio\n"
        "async def noisy(*args):\n"
        "    pair = await opened(*args)\n"
        "    print('STRAY', flush=True); os.write(1, b'RAW\\n')\n"
        "    return pair\n"
        "stdio.open_stdio = noisy\n"
        "from lsp_server.lsp.server import run\n"
        "sys.exit(run())\n"
    )
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "rootUri": workspace.as_uri(), "initializationOptions": {"index": False}}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]  # fmt: skip
    frames = b"".join(
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        for body in (json.dumps(m).encode() for m in messages)
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=frames,
        capture_output=True,
        env=server_env(kiln_home),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    out, ids = done.stdout, []
    while out:  # stdout holds nothing but Content-Length frames
        head, sep, rest = out.partition(b"\r\n\r\n")
        assert sep and head.startswith(b"Content-Length: "), out[:200]
        size = int(head.split(b"\r\n")[0].split(b":")[1])
        ids.append(json.loads(rest[:size]).get("id"))
        out = rest[size:]
    assert [i for i in ids if i is not None] == [1, 2]
    assert b"STRAY" in done.stderr and b"RAW" in done.stderr


@pytest.mark.slow
async def test_tcp_mode_serves_one_client(workspace: Path, scripted_env: object) -> None:
    import socket
    import sys

    from tests.lsp.kiln_client import Editor

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lsp_server", "lsp", "--tcp", f"127.0.0.1:{port}",
        env=scripted_env(["hi"]), stderr=asyncio.subprocess.DEVNULL,  # type: ignore[operator]
    )  # fmt: skip
    editor = Editor()
    try:
        deadline = time.monotonic() + 60  # the server may take a while to listen
        while True:
            try:
                await editor.start_tcp("127.0.0.1", port)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)
        await editor.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=workspace.as_uri(),
                initialization_options={"editMode": "sometimes"},
            )
        )
        hello = await editor.request("kiln/hello", {})
        assert hello["root"] == str(workspace)
        # A bad option does not stop the server; it is reported and the default kept.
        assert "sometimes" in hello["configError"] and hello["config"]["editMode"] == "ask"
    finally:
        proc.kill()
        await proc.wait()
        await editor.stop()
