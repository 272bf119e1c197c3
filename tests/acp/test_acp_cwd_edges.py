"""A `cwd` no folder can be (docs/acp.md, errors table): `session/new`, `session/load` and
`session/list` answer -32602 in one line saying why, and store nothing. A NUL byte or a name
too long for the file system was an internal error (-32603) carrying Python's message; a
`session/load` of a stored session was served from a `cwd` that is a file inside it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from acp import RequestError

from tests.acp.conftest import EditorClient

pytestmark = pytest.mark.e2e


async def test_unusable_cwds_are_one_line_invalid_params_and_store_nothing(
    spawn, workspace: Path, tmp_path: Path
) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")  # a link to itself
    long_name = str(tmp_path / ("x" * 300))
    deep = str(tmp_path / "/".join(["y" * 200] * 30))  # past PATH_MAX
    unusable = {
        str(tmp_path / "missing"): "is not a directory",
        str(workspace / "app.py"): "is not a directory",
        str(tmp_path / "loop"): "is a symbolic link loop",
        str(tmp_path / "loop" / "sub"): "is a symbolic link loop",
        str(tmp_path) + "/a\x00b": "holds a NUL byte",
        str(tmp_path) + "/half-\ud83d": "half-\ufffd is not a directory",  # read as U+FFFD
        long_name: "is too long a name for a folder",
        deep: "is too long a name for a folder",
        "relative/dir": "must be an absolute path",
    }
    async with spawn(["Fine."], EditorClient()) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        await agent.conn.prompt(session_id=sid, prompt=[{"type": "text", "text": "hi"}])
        for cwd, why in unusable.items():
            calls = {
                "new": agent.conn.new_session(cwd=cwd),
                "load": agent.conn.load_session(cwd=cwd, session_id=sid),
                "list": agent.conn.list_sessions(cwd=cwd),
            }
            for method, call in calls.items():
                with pytest.raises(RequestError) as err:
                    await call
                message = str(err.value)
                assert err.value.code == -32602, (method, cwd[:80], err.value)
                assert why in message and "\n" not in message, (method, message)
                assert len(message) < 400 and "Errno" not in message, message
        listed = (await agent.conn.list_sessions()).sessions
        assert [s.session_id for s in listed] == [sid]  # nothing half-made
        # the stored session is still served from its own folder
        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
    assert not os.path.lexists(long_name)


async def test_a_file_inside_the_workspace_is_no_cwd_to_load_a_session_from(
    spawn, workspace: Path
) -> None:
    """The folder check of `session/load` only compared the path with the session's folder:
    a file in it, or a folder not made yet, passed, and its path was kept for the session."""
    async with spawn(["Fine."], EditorClient()) as agent:
        await agent.start()
        sid = (await agent.conn.new_session(cwd=str(workspace))).session_id
        for cwd in (workspace / "app.py", workspace / "not-yet"):
            with pytest.raises(RequestError) as err:
                await agent.conn.load_session(cwd=str(cwd), session_id=sid)
            assert err.value.code == -32602 and "is not a directory" in str(err.value)
        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
