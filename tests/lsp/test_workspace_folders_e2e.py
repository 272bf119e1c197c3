"""Multi-root `initialize` as VS Code sends it (`rootUri` null, several `workspaceFolders`, one
of them not on this machine's disk) and `workspace/didChangeWorkspaceFolders`: the agent and
the index work in one root, the first folder that is a local directory, and keep it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer

pytestmark = pytest.mark.e2e


async def test_the_first_local_folder_is_the_root_and_stays_it(
    tmp_path: Path, kiln_home: Path
) -> None:
    one, two, three = (tmp_path / name for name in ("one", "two", "three"))
    for folder, name in ((one, "alpha_one"), (two, "beta_two"), (three, "gamma_three")):
        folder.mkdir()
        (folder / f"{name}.py").write_text(f"def {name}():\n    return 1\n", encoding="utf-8")
    folders = [
        {"uri": "vscode-vfs://github/kiln/remote", "name": "remote"},
        {"uri": (tmp_path / "missing").as_uri(), "name": "missing"},
        {"uri": one.as_uri(), "name": "one"},
        {"uri": two.as_uri(), "name": "two"},
    ]
    server = await RawServer.start(tmp_path, server_env(kiln_home))
    try:
        await server.initialize(
            one,
            rootUri=None,
            workspaceFolders=folders,
            capabilities={"workspace": {"workspaceFolders": True}},
        )
        hello = (await server.request("hello", "kiln/hello"))["result"]
        assert hello["root"] == str(one.resolve())
        status = await server.index_until(lambda s: s["state"] == "ready")
        assert status["files"] == 1, status
        event = {
            "added": [{"uri": three.as_uri(), "name": "three"}],
            "removed": [{"uri": one.as_uri(), "name": "one"}, folders[0]],
        }
        server.notify("workspace/didChangeWorkspaceFolders", {"event": event})
        again = (await server.request("hello-again", "kiln/hello"))["result"]
        assert again["root"] == hello["root"]
        found = await server.request("find", "kiln/complete/mentions", {"query": "gamma_three"})
        assert not [i for i in found["result"]["items"] if i["kind"] == "symbol"], found
        found = await server.request("find-one", "kiln/complete/mentions", {"query": "alpha_one"})
        assert [i["path"] for i in found["result"]["items"] if i["kind"] == "symbol"] == [
            "alpha_one.py"
        ], found
        session = (await server.request("new", "kiln/session/new", {}))["result"]
        assert session["cwd"] == str(one.resolve())
        outside = {"type": "resource_link", "uri": (two / "beta_two.py").as_uri(), "name": "b"}
        refused = await server.request(
            "prompt",
            "kiln/session/prompt",
            {"sessionId": session["sessionId"], "prompt": [outside]},
        )
        assert refused["error"]["code"] == -31004, refused
        assert (await server.request("bye", "shutdown"))["result"] is None
        server.notify("exit")
        assert await server.exit_code() == 0
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]
