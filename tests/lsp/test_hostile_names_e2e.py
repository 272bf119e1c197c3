"""`kiln lsp` against names a hostile or broken client sends: folders that are not there, paths
holding NUL, components past the file system's 255 bytes, `file:` URIs whose escapes are not
UTF-8 or that name another host. Each is one JSON-RPC error of one line, -32602 (never -32603,
never a traceback), and the server goes on serving (lsp_server/PROTOCOL.md §4, §7)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.session_store import SessionStore
from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer, error_code

pytestmark = pytest.mark.e2e

LONG = "x" * 300  # one component past NAME_MAX (255 bytes)


def hostile_folders(workspace: Path) -> list[str]:
    (workspace / "plain.txt").write_text("a file, not a folder\n", encoding="utf-8")
    (workspace / "loop").symlink_to("loop")  # resolve() raised RuntimeError on it
    return [
        str(workspace / "missing"),
        str(workspace / "plain.txt"),
        str(workspace / "loop"),
        str(workspace / "a\x00b"),
        str(workspace / LONG),
        str(workspace / "/".join(["y" * 200] * 25)),  # past PATH_MAX (4,096 bytes)
        f"{workspace.as_uri()}/%FF%FE",  # escapes that are not UTF-8
        f"{workspace.as_uri()}/a%00b",
        f"file://otherhost{workspace}",  # a folder on another machine, not this one
    ]


def one_line_invalid(reply: dict[str, Any]) -> str:
    assert error_code(reply) == -32602, reply
    message = str(reply["error"]["message"])
    assert "\n" not in message and len(message) < 700, message
    return message


async def test_a_session_cwd_that_names_no_folder_here_is_invalid_params(
    workspace: Path, scripted_env: Callable[[list[Any]], dict[str, str]]
) -> None:
    server = await RawServer.start(workspace, scripted_env(["never"]))
    try:
        await server.initialize(workspace)
        for n, cwd in enumerate(hostile_folders(workspace)):
            for method in ("kiln/session/new", "kiln/session/list"):
                reply = await server.request(f"{method}-{n}", method, {"cwd": cwd})
                one_line_invalid(reply)
        made = await server.request("ok", "kiln/session/new", {"cwd": str(workspace)})
        assert made["result"]["cwd"] == str(workspace)  # serving goes on
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")


async def test_a_long_session_cwd_is_shown_by_its_start_and_its_end(
    workspace: Path, scripted_env: Callable[[list[Any]], dict[str, str]]
) -> None:
    """A long name in an error keeps its end, where a path says which file it is: cut at 200
    characters, the message showed only folders and lost the last name. A control character
    in it is shown as its escape, so the message stays one line."""
    cwd = str(workspace / ("d" * 150) / ("e" * 100) / "last-name\x1b")
    server = await RawServer.start(workspace, scripted_env(["never"]))
    try:
        await server.initialize(workspace)
        message = one_line_invalid(await server.request(1, "kiln/session/new", {"cwd": cwd}))
        assert message.startswith(f"cwd {workspace}/ddd") and "…" in message, message
        assert message.endswith("/last-name\\x1b is not a directory"), message
        assert "\x1b" not in message and len(message) < 250, message
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")


async def test_a_prompt_reference_that_names_no_file_here_is_invalid_params(
    workspace: Path, scripted_env: Callable[[list[Any]], dict[str, str]]
) -> None:
    """A `file:` URI with undecodable escapes was read as a page of another scheme (an empty
    reference), one naming another host as the local file of that path, and a name past 255
    bytes failed in the file system as -32603."""
    server = await RawServer.start(workspace, scripted_env(["never"]))
    try:
        await server.initialize(workspace)
        session = (await server.request("new", "kiln/session/new", {}))["result"]["sessionId"]
        for n, uri in enumerate(
            [
                f"{workspace.as_uri()}/%FF.py",
                f"{workspace.as_uri()}/a%00b.py",
                f"file://otherhost{workspace}/app.py",
                f"{workspace.as_uri()}/{LONG}.py",
            ]
        ):
            link = {"type": "resource_link", "uri": uri, "name": "x"}
            prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}, link]}
            message = one_line_invalid(await server.request(f"p{n}", "kiln/session/prompt", prompt))
            assert "file" in message
        assert (await server.request("hello", "kiln/hello", {}))["result"]["protocolVersion"] == 1
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")


async def test_an_upper_case_file_scheme_names_the_local_file(
    workspace: Path, kiln_home: Path, scripted_env: Callable[[list[Any]], dict[str, str]]
) -> None:
    """A URI's scheme is case-insensitive (RFC 3986): `FILE:///…` was read as another scheme.
    A root so named was passed over for the process's cwd, a session cwd so named was taken as
    a relative folder under the root (refused), a file so attached reached the model as an
    empty reference, and one of another host was let through."""
    upper = "FILE" + workspace.as_uri()[len("file") :]
    server = await RawServer.start(workspace.parent, scripted_env(["Read it."]))
    try:
        await server.initialize(workspace, rootUri=upper)
        status = await server.request("status", "kiln/index/status", {})
        assert status["result"]["root"] == str(workspace), status
        made = await server.request("new", "kiln/session/new", {"cwd": upper})
        assert made.get("result", {}).get("cwd") == str(workspace), made
        sid = made["result"]["sessionId"]
        text = {"type": "text", "text": "see"}
        other = {"type": "resource_link", "uri": f"FILE://otherhost{workspace}/app.py", "name": "x"}
        refused = {"sessionId": sid, "prompt": [text, other]}
        assert "otherhost" in one_line_invalid(
            await server.request("p0", "kiln/session/prompt", refused)
        )
        link = {"type": "resource_link", "uri": f"{upper}/app.py", "name": "app.py"}
        done = await server.request(
            "p1", "kiln/session/prompt", {"sessionId": sid, "prompt": [text, link]}
        )
        assert "result" in done, done
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")
    (user, *_) = [
        m for m in SessionStore(kiln_home / "sessions.db").messages(sid) if m["role"] == "user"
    ]
    said = "\n".join(str(b.get("text", "")) for b in user["content"])
    assert 'path="app.py"' in said and "hello" in said, said


async def test_documents_under_names_that_name_no_file_here_are_not_served(
    workspace: Path, kiln_home: Path
) -> None:
    """Buffers the editor syncs under such URIs are held but name no file: hover answers null
    (as for any document Kiln does not serve), nothing reaches the index, nothing crashes."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace)
        await server.index_until(lambda s: s["state"] == "ready")
        for n, uri in enumerate(
            [
                f"{workspace.as_uri()}/%FF.py",
                f"{workspace.as_uri()}/a%00b.py",
                f"file://otherhost{workspace}/x.py",
                f"{workspace.as_uri()}/{LONG}.py",
                f"{workspace.as_uri()}/" + "/".join(["y" * 200] * 25) + ".py",
            ]
        ):
            doc = {"uri": uri, "languageId": "python", "version": 1, "text": "def hidden():\n"}
            server.notify("textDocument/didOpen", {"textDocument": doc})
            change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [doc]}
            server.notify("textDocument/didChange", change)
            server.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
            at = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 5}}
            assert (await server.request(n, "textDocument/hover", at))["result"] is None
        found = await server.request("m", "kiln/complete/mentions", {"query": "hidden"})
        assert not [i for i in found["result"]["items"] if i["label"] == "hidden"]
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")


@pytest.mark.parametrize(
    "params",
    [
        {"rootPath": "/nowhere\x00/x", "rootUri": None},
        {"rootPath": "/" + LONG, "rootUri": None},
        {"rootUri": "file:///" + LONG},
        {"rootUri": "file:///%FF%FE"},
        {"rootUri": "file://otherhost/tmp"},
        {"workspaceFolders": [{"uri": "file:///" + LONG, "name": "long"}], "rootUri": None},
    ],
    ids=["nul-path", "long-path", "long-uri", "not-utf8", "other-host", "long-folder"],
)
async def test_initialize_with_a_root_that_names_no_folder_here_uses_the_process_cwd(
    workspace: Path, kiln_home: Path, params: dict[str, Any]
) -> None:
    """§1: a root that names no local folder is passed over; a name past 255 bytes made
    `is_dir` raise ENAMETOOLONG and initialize fail as -32603."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace, **params)
        status = await server.request(1, "kiln/index/status", {})
        assert status["result"]["root"] == str(workspace)
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")


async def test_initialize_naming_no_folder_when_the_process_cwd_is_gone_is_invalid_params(
    workspace: Path, tmp_path: Path, kiln_home: Path
) -> None:
    """With no folder named and the server's working directory deleted, there is no workspace:
    one line, -32602, and the client may send initialize again naming one (it was -32603 with
    pygls's traceback in `data`, and every later initialize was "already sent")."""
    gone = tmp_path / "gone"
    gone.mkdir()
    server = await RawServer.start(gone, server_env(kiln_home))
    try:
        assert error_code(await server.request(0, "kiln/hello", {})) == -32002  # it is serving
        gone.rmdir()
        base = {"processId": None, "capabilities": {}}
        for n, params in enumerate([{"rootUri": None}, {"rootUri": f"{gone.as_uri()}"}]):
            reply = await server.request(f"init-{n}", "initialize", {**base, **params})
            assert "working directory is gone" in one_line_invalid(reply)
            assert "data" not in reply["error"]  # no traceback
        await server.initialize(workspace)
        status = await server.request(1, "kiln/index/status", {})
        assert status["result"]["root"] == str(workspace)
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")


def deep_file(root: Path, depth: int) -> str:
    """A file ``depth`` folders of 250 bytes down: its path is longer than PATH_MAX (4,096
    bytes), so nothing can open it by its full name. Made a level at a time, relative to an
    open folder, as a tar or git checkout can make it."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    parts = []
    try:
        for level in range(depth):
            name = f"{level:02d}" + "d" * 248
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
            parts.append(name)
        out = os.open("deep.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, b"def buried_function():\n    return 1\n")
        os.close(out)
    finally:
        os.close(fd)
    return "/".join([*parts, "deep.py"])


async def test_a_file_whose_path_is_past_path_max_is_skipped_by_the_index(
    workspace: Path, kiln_home: Path
) -> None:
    deep_file(workspace, 17)  # 17 × 251 bytes: past PATH_MAX, under the 64-level cap
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace)
        status = await server.index_until(lambda s: s["state"] in ("ready", "unavailable"))
        assert status["state"] == "ready" and "error" not in status, status
        found = await server.request(2, "kiln/complete/mentions", {"query": "greet"})
        assert any(item["label"] == "greet" for item in found["result"]["items"])
        buried = await server.request(3, "kiln/complete/mentions", {"query": "buried_function"})
        assert not any(i["label"] == "buried_function" for i in buried["result"]["items"])
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")


@pytest.mark.parametrize(
    "url", ["http://exa\x01mple.com/", "http://a\x00b/", "http://exa\nmple.com"]
)
async def test_a_registry_url_holding_a_control_character_is_refused_as_a_registry_error(
    workspace: Path, kiln_home: Path, url: str
) -> None:
    """httpx raised InvalidURL (-32603 with a traceback) on a control character, and urlsplit
    dropped a line break: `http://exa\\nmple.com` asked example.com. A registry URL that is
    no http(s) URL is -31000, as `ftp://x` was already (lsp_server/PROTOCOL.md §6, §7)."""
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        await server.initialize(workspace)
        searched = await server.request(1, "kiln/skills/search", {"registry": url})
        spec = {"spec": "acme/tool", "registry": url, "yes": True}
        installed = await server.request(2, "kiln/skills/install", spec)
        for reply in (searched, installed):
            assert error_code(reply) == -31000, reply
            message = reply["error"]["message"]
            assert "control character" in message and "\n" not in message
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")
