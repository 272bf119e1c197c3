"""The index `kiln lsp` keeps "fresh from unsaved buffers" (README, PROTOCOL.md §2), as the
agent's `search_code`, hover and `@` mentions see it right after the editor's notification,
with no pause for the re-index debounce: a buffer not on disk yet is found at once, a close
forgets its unsaved text (also text typed just before the close), buffers restored at start-up
win over the first scan, ignored folders stay out, and a workspace opened through a symbolic
link or holding a file name with a space works like any other, an edit the agent applied is
found and a deferred one is not, and a file deleted or moved on disk while open keeps its
buffer until the close."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer

pytestmark = pytest.mark.e2e

_ids = itertools.count()


def _open(server: RawServer, uri: str, text: str) -> None:
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    server.notify("textDocument/didOpen", {"textDocument": doc})


def _replace(server: RawServer, uri: str, version: int, text: str) -> None:
    params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}
    server.notify("textDocument/didChange", params)


def _search_steps(*queries: str) -> list[Any]:
    steps: list[Any] = []
    for query in queries:
        call = {"name": "search_code", "input": {"query": query}}
        steps += [{"text": "", "tool_calls": [call]}, "done"]
    return steps


async def _search(server: RawServer, sid: str, prompt: str = "go") -> tuple[str, str]:
    """One prompt whose turn runs the next scripted `search_code`: (status, output text)."""
    reply = await server.request(
        next(_ids), "kiln/session/prompt", {"sessionId": sid, "prompt": prompt}
    )
    assert reply["result"]["stopReason"] == "end_turn", reply
    done = [
        m["params"]["update"]
        for m in server.messages
        if m.get("method") == "kiln/session/update"
        and m["params"]["update"].get("sessionUpdate") == "tool_call_update"
        and m["params"]["update"].get("status") in ("completed", "failed")
    ][-1]
    return done["status"], done["content"][0]["content"]["text"]


async def _until(server: RawServer, ok: Any) -> None:
    """Poll `kiln/index/status` until ``ok(status)``: the server's own account of its work."""
    await server.index_until(ok)


async def test_search_sees_buffers_at_once_and_forgets_them_at_close(
    tmp_path: Path, scripted_env: Any
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "app.py").write_text("def greet(name):\n    return name\n")
    (real / ".gitignore").write_text("build/\n")
    root = tmp_path / "link"  # the editor opens the workspace through a symbolic link
    root.symlink_to(real)
    queries = ["restored_marker", "draft_marker", "closed_marker", "ignored_marker"]
    server = await RawServer.start(root, scripted_env(_search_steps(*queries)))
    try:
        await server.initialize(root)
        # An editor restoring a dirty buffer opens it right behind `initialized`, while the
        # first scan reads the disk.
        _open(server, (root / "app.py").as_uri(), "def restored_marker():\n    pass\n")
        await _until(server, lambda s: s["state"] == "ready" and s["pendingFiles"] == 0)
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        status, text = await _search(server, sid)
        assert status == "completed" and "app.py" in text and "restored_marker" in text, text

        draft = (root / "drafts" / "my draft.py").as_uri()  # not on disk; a space: %20
        assert "%20" in draft
        _open(server, draft, "def draft_marker():\n    pass\n")
        status, text = await _search(server, sid)
        assert status == "completed" and "drafts/my draft.py" in text, text

        # Typed, then closed before the debounce: the closed buffer's text never comes back.
        closing = (root / "closing.py").as_uri()
        (real / "closing.py").write_text("x = 1\n")
        _open(server, closing, "x = 1\n")
        _replace(server, closing, 2, "def closed_marker():\n    pass\n")
        await server.request(next(_ids), "kiln/hello", {})
        server.notify("textDocument/didClose", {"textDocument": {"uri": closing}})
        await _until(server, lambda s: s["pendingFiles"] == 0)
        _, text = await _search(server, sid)
        assert "function closed_marker" not in text, text
        assert "closing.py" in text, text  # the module the disk holds

        for name in ("build/gen.py", "node_modules/pkg/index.py"):
            _open(server, (root / name).as_uri(), "def ignored_marker():\n    pass\n")
        _, text = await _search(server, sid)
        assert "function ignored_marker" not in text and "build/" not in text, text
        assert "node_modules" not in text, text

        # Hover and mentions see a change at once too, in the buffer named with %20.
        _replace(
            server,
            draft,
            2,
            "def draft_marker():\n    typed_marker()\n\ndef typed_marker():\n    pass\n",
        )
        hover = await server.request(
            next(_ids),
            "textDocument/hover",
            {"textDocument": {"uri": draft}, "position": {"line": 1, "character": 6}},
        )
        assert "`typed_marker` `drafts/my draft.py:4`" in hover["result"]["contents"]["value"]
        _replace(server, draft, 3, "def mention_marker():\n    pass\n")
        items = await server.request(
            next(_ids), "kiln/complete/mentions", {"query": "mention_mark"}
        )
        labels = [(i["label"], i["path"]) for i in items["result"]["items"]]
        assert ("mention_marker", "drafts/my draft.py") in labels, labels
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]


async def test_an_edit_is_searchable_once_applied_and_a_deferred_one_is_not(
    tmp_path: Path, scripted_env: Any
) -> None:
    """The agent re-indexes a file it edits, so its next search finds the edit; a deferred edit
    waiting for `kiln/edit/resolve` is in no buffer and on no disk, and stays out of the index
    (it was indexed as if applied)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def greet(name):\n    return name\n")
    steps: list[Any] = []
    for name in ("applied", "deferred"):
        content = f"def {name}_marker():\n    pass\n"
        write = {"name": "write_file", "input": {"path": f"{name}.py", "content": content}}
        search = {"name": "search_code", "input": {"query": f"{name}_marker"}}
        steps += [  # each session runs the script from its start: steps match its prompt
            {"match": name, "text": "", "tool_calls": [write]},
            {"match": name, "text": "", "tool_calls": [search]},
            {"match": name, "text": "done"},
        ]
    server = await RawServer.start(root, scripted_env(steps))
    try:
        await server.initialize(root, initializationOptions={"editMode": "auto", "mode": "yolo"})
        await _until(server, lambda s: s["state"] == "ready")
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        status, text = await _search(server, sid, "applied")
        assert (root / "applied.py").is_file()
        assert status == "completed" and "function applied_marker" in text, text

        params = {"editMode": "deferred", "mode": "yolo"}
        sid = (await server.request("new2", "kiln/session/new", params))["result"]["sessionId"]
        _, text = await _search(server, sid, "deferred")
        assert not (root / "deferred.py").exists()
        assert "function deferred_marker" not in text, text
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]


async def _hover_names(server: RawServer, uri: str, line: int) -> list[str]:
    """`name path` of each hit hover lists for the word at the start of ``line``."""
    params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": 1}}
    reply = await server.request(next(_ids), "textDocument/hover", params)
    if reply["result"] is None:
        return []
    rows = reply["result"]["contents"]["value"].splitlines()  # - `name` `path:line`
    return [row.split("`")[1] + " " + row.split("`")[3].rsplit(":", 1)[0] for row in rows]


async def test_a_file_deleted_or_moved_on_disk_while_open_keeps_its_buffer_until_closed(
    tmp_path: Path, kiln_home: Path
) -> None:
    """The open buffer owns the file's rows: deleting or renaming the file on disk (reported by
    `workspace/didChangeWatchedFiles`, and by the server's own watcher) keeps them; the close
    brings back what the disk holds (nothing, for a deleted file)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "gone.py").write_text("def gone_marker():\n    pass\n")
    (root / "old.py").write_text("def moved_marker():\n    pass\n")
    server = await RawServer.start(root, server_env(kiln_home))
    try:
        await server.initialize(root)
        await _until(server, lambda s: s["state"] == "ready")
        probe = (root / "probe.py").as_uri()
        _open(server, probe, "gone_marker\nmoved_marker\n")
        gone, old = (root / "gone.py").as_uri(), (root / "old.py").as_uri()
        _open(server, gone, "def gone_marker():\n    pass\n")
        _open(server, old, "def moved_marker():\n    pass\n")
        (root / "gone.py").unlink()
        (root / "old.py").rename(root / "new.py")
        changes = [
            {"uri": gone, "type": 3},
            {"uri": old, "type": 3},
            {"uri": (root / "new.py").as_uri(), "type": 1},
        ]
        server.notify("workspace/didChangeWatchedFiles", {"changes": changes})
        assert "gone_marker gone.py" in await _hover_names(server, probe, 0)
        moved = await _hover_names(server, probe, 1)
        assert {"moved_marker old.py", "moved_marker new.py"} <= set(moved), moved
        for uri in (gone, old):
            server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        assert "gone_marker gone.py" not in await _hover_names(server, probe, 0)
        moved = await _hover_names(server, probe, 1)
        assert "moved_marker new.py" in moved and "moved_marker old.py" not in moved, moved
    finally:
        await server.close()
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]
