"""Paths no file can have, in a prompt or in a tool call (docs/acp.md): a symbolic link loop,
a name too long for the file system, a `#L` line fragment of thousands of digits.

A prompt attaching one was an internal error (-32603, with a traceback in the log), from
`Path.resolve` (a loop), `Path.is_dir` (a name too long) or `int()` (over 4,300 digits); a tool
call naming one ended the whole turn with -32603 while its locations were mapped. Now the
prompt is -32602 in one line, and the tool call fails on its own with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from agent.session_store import SessionStore
from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


def _hostile(workspace: Path) -> dict[str, str]:
    (workspace / "loop").symlink_to(workspace / "loop")
    return {
        "loop": "loop",
        "through the loop": "loop/inner.py",
        "long name": "n" * 300,
        "deep": "/".join(["d" * 200] * 30),
    }


@pytest.mark.parametrize("fs", [True, False], ids=["client-reads", "disk"])
async def test_attached_paths_no_file_can_have_are_invalid_params(
    spawn, workspace: Path, fs: bool
) -> None:
    paths = _hostile(workspace)
    links = {
        name: {"type": "resource_link", "uri": (workspace / rel).as_uri(), "name": "x"}
        for name, rel in paths.items()
    }
    links["embedded in a loop"] = {
        "type": "resource", "resource": {"uri": (workspace / "loop").as_uri(), "text": "t"},
    }  # fmt: skip
    app = (workspace / "app.py").as_uri()
    for fragment in ("L" + "9" * 5000, "L1-L" + "9" * 30, "L3000000000"):
        links[f"#{fragment[:12]}"] = {"type": "resource_link", "uri": f"{app}#{fragment}",
                                      "name": "app.py"}  # fmt: skip
    async with spawn(["Fine."], EditorClient()) as agent:
        await agent.start(fs=fs)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        for name, link in links.items():
            with pytest.raises(RequestError) as err:
                await agent.conn.prompt(
                    session_id=sid, prompt=[{"type": "text", "text": "see"}, link]
                )
            message = str(err.value)
            assert err.value.code == -32602, (name, err.value)
            assert "\n" not in message and len(message) < 300, (name, message)
        assert agent.client.reads == []  # nothing was asked of the client for them
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "hi"}])
        assert result.stop_reason == "end_turn"  # the session goes on
        # docs/acp.md: an embedded block whose name no file can have brings its own text
        embedded = {"type": "resource", "resource": {"uri": (workspace / paths["long name"]).as_uri(),
                                                     "text": "the selection"}}  # fmt: skip
        result = await agent.conn.prompt(session_id=sid, prompt=[embedded])
        assert result.stop_reason == "end_turn"


async def test_attachment_errors_say_why(spawn, workspace: Path) -> None:
    paths = _hostile(workspace)
    link = {"type": "resource_link", "uri": (workspace / paths["loop"]).as_uri(), "name": "x"}
    long_link = {"type": "resource_link", "uri": (workspace / paths["long name"]).as_uri(),
                 "name": "x"}  # fmt: skip
    digits = {"type": "resource_link", "uri": (workspace / "app.py").as_uri() + "#L" + "9" * 5000,
              "name": "app.py"}  # fmt: skip
    async with spawn(["Fine."], EditorClient()) as agent:
        await agent.start(fs=False)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        said = []
        for block in (link, long_link, digits):
            with pytest.raises(RequestError) as err:
                await agent.conn.prompt(session_id=sid, prompt=[block])
            said.append(str(err.value))
    assert "Too many levels of symbolic links" in said[0], said
    assert "longer than 255 bytes" in said[1], said  # told apart before any system call
    assert "names a line past 2,147,483,647" in said[2], said


async def test_tool_calls_on_such_paths_fail_with_the_reason_and_the_turn_goes_on(
    spawn, workspace: Path
) -> None:
    paths = _hostile(workspace)
    calls = [
        ("read_file", {"path": paths["loop"]}),
        ("read_file", {"path": paths["through the loop"]}),
        ("write_file", {"path": paths["loop"], "content": "x"}),
        ("edit_file", {"path": paths["through the loop"], "old_text": "a", "new_text": "b"}),
        ("list_files", {"path": paths["loop"]}),
        ("read_file", {"path": paths["long name"]}),
        ("read_file", {"path": paths["deep"]}),
        ("write_file", {"path": paths["long name"], "content": "x"}),
    ]
    step = {"tool_calls": [{"name": n, "input": a} for n, a in calls]}
    async with spawn([step, "Done."], EditorClient(), KILN_ACP_MODE="yolo") as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        result = await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "go"}])
        assert result.stop_reason == "end_turn"
    finished = {
        u["toolCallId"]: u
        for u in agent.client.updates
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")
    }
    assert len(finished) == len(calls) and all(u["status"] == "failed" for u in finished.values())
    said = [u["content"][0]["content"]["text"] for u in finished.values()]
    assert sum("Symlink loop" in s or "symbolic link" in s for s in said) == 5, said
    assert sum("File name too long" in s for s in said) == 3, said
    started = [u for u in agent.client.updates if u["sessionUpdate"] == "tool_call"]
    in_loop = [u for u in started if u["rawInput"]["path"].startswith("loop")]
    assert len(in_loop) == 5 and not any(u.get("locations") for u in in_loop)  # no such place


@pytest.mark.parametrize("fs", [True, False], ids=["client-reads", "disk"])
async def test_an_upper_case_file_scheme_names_the_local_file(
    spawn, workspace: Path, kiln_home: Path, fs: bool
) -> None:
    """A URI's scheme is case-insensitive (RFC 3986): a `FILE:///…` link was read as another
    scheme, so the file reached the model as an empty reference, and one naming another host
    was let through instead of refused."""
    upper = "FILE" + (workspace / "app.py").as_uri()[len("file") :]
    link = {"type": "resource_link", "uri": upper, "name": "app.py"}
    other = {"type": "resource_link", "uri": f"FILE://otherhost{workspace}/app.py", "name": "x"}
    text = {"type": "text", "text": "see"}
    async with spawn(["Fine."], EditorClient()) as agent:
        await agent.start(fs=fs)
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        with pytest.raises(RequestError) as err:
            await agent.conn.prompt(session_id=sid, prompt=[text, other])
        assert err.value.code == -32602 and "otherhost" in str(err.value), err.value
        result = await agent.conn.prompt(session_id=sid, prompt=[text, link])
        assert result.stop_reason == "end_turn"
    assert agent.client.reads == ([str(workspace / "app.py")] if fs else [])
    (user, *_) = [
        m for m in SessionStore(kiln_home / "sessions.db").messages(sid) if m["role"] == "user"
    ]
    said = "\n".join(str(b.get("text", "")) for b in user["content"])
    assert 'path="app.py"' in said and "return 'hello'" in said, said
