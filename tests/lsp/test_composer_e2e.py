"""``@`` and ``/`` completion for chat composers, against a real ``kiln lsp`` and its index."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from indexer import Index
from lsp_server.core import INVALID_PARAMS
from tests.lsp.conftest import running
from tests.waiting import answer_when

pytestmark = pytest.mark.e2e


async def _wait_indexed(editor: Any) -> None:
    status = await answer_when(
        lambda: editor.request("kiln/index/status", {}), lambda s: s["state"] == "ready"
    )
    assert status["state"] == "ready", f"index never ready: {status}"


async def test_mentions_rank_index_symbols_files_and_unsaved_buffers(
    workspace: Path, scripted_env: object
) -> None:
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "config.py").write_text(
        "def load_config(path):\n    return {}\n\n\ndef config_path():\n    return 'x'\n"
    )
    (workspace / "pkg" / "use.py").write_text(
        "from pkg.config import load_config\n\n\ndef main():\n    return load_config('a')\n"
    )
    async with running(workspace, scripted_env([])) as editor:  # type: ignore[operator]
        await _wait_indexed(editor)
        found = await editor.request("kiln/complete/mentions", {"query": "load_conf"})
        assert found["indexed"] is True
        first = found["items"][0]
        assert first["kind"] == "symbol" and first["label"] == "load_config", found
        assert first["path"] == "pkg/config.py" and first["line"] == 1
        assert first["uri"] == (workspace / "pkg" / "config.py").as_uri()

        files = await editor.request("kiln/complete/mentions", {"query": "conf"})
        kinds = {(i["kind"], i["path"]) for i in files["items"]}
        assert ("file", "pkg/config.py") in kinds

        folders = await editor.request("kiln/complete/mentions", {"query": "pk"})
        assert ("folder", "pkg/") in {(i["kind"], i["path"]) for i in folders["items"]}

        # A symbol that exists only in an unsaved buffer is offered once the index follows it.
        uri = editor.open(workspace / "app.py", (workspace / "app.py").read_text())
        editor.type_text(uri, "def brand_new_helper():\n    return 1\n")
        got = await answer_when(
            lambda: editor.request("kiln/complete/mentions", {"query": "brand_new"}),
            lambda got: got["items"],
        )
        assert got["items"][0]["label"] == "brand_new_helper", got
        assert "brand_new_helper" not in (workspace / "app.py").read_text()

        try:
            await editor.request("kiln/complete/mentions", {"query": "x", "limit": 0})
        except Exception as exc:  # noqa: BLE001 - the JSON-RPC error is the point
            assert getattr(exc, "code", None) == INVALID_PARAMS
        else:
            raise AssertionError("limit 0 was accepted")


async def test_commands_list_builtins_and_skills_and_use_loads_the_skill(
    workspace: Path, scripted_env: object
) -> None:
    skill = workspace / ".kiln" / "skills" / "pdf"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: pdf\ndescription: Fill in PDF forms.\n---\nUse pdftk-marker-4411 to fill forms.\n"
    )
    steps = [{"match": "pdftk-marker-4411", "text": "the skill was loaded"}, "no skill"]
    async with running(workspace, scripted_env(steps)) as editor:  # type: ignore[operator]
        listed = await editor.request("kiln/complete/commands", {})
        names = [(c["name"], c["kind"]) for c in listed["commands"]]
        for builtin in ("clear", "compact", "mode", "model", "context"):
            assert (builtin, "builtin") in names
        assert ("pdf", "skill") in names
        only = await editor.request("kiln/complete/commands", {"query": "/pd"})
        assert [c["name"] for c in only["commands"]] == ["pdf"]

        used = await editor.request("kiln/skills/use", {"name": "pdf"})
        assert "pdftk-marker-4411" in used["block"]["resource"]["text"]
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        # A new, empty session has nothing to compact either (it was an internal error).
        empty = await editor.request("kiln/session/compact", {"sessionId": sid})
        assert empty == {"compacted": False}
        prompt = [used["block"], {"type": "text", "text": "fill the form"}]
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": prompt})
        chunks = editor.updates_for(sid, "agent_message_chunk")
        assert "".join(c["content"]["text"] for c in chunks) == "the skill was loaded"
        # A two-message session has nothing to compact; the answer says so.
        compacted = await editor.request("kiln/session/compact", {"sessionId": sid})
        assert compacted == {"compacted": False}
        try:
            await editor.request("kiln/skills/use", {"name": "nope"})
        except Exception as exc:  # noqa: BLE001
            assert "nope" in str(exc) and getattr(exc, "code", None) == -31000  # PROTOCOL.md
        else:
            raise AssertionError("an unknown skill was loaded")


async def test_an_edit_accepted_with_some_hunks_applies_only_those(
    workspace: Path, scripted_env: object
) -> None:
    old = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\nh = 8\ni = 9\nj = 10\n"
    (workspace / "nums.py").write_text(old)
    new = old.replace("a = 1", "a = 100").replace("j = 10", "j = 1000")
    kept = old.replace("a = 1", "a = 100")  # the first hunk only
    call = {"name": "write_file", "input": {"path": "nums.py", "content": new}}
    steps = [
        {"match": "bump", "text": "Bumping.", "tool_calls": [call]},
        {"match": "re:only some hunks of your edit to nums.py", "text": "I will read it again."},
    ]
    async with running(workspace, scripted_env(steps)) as editor:  # type: ignore[operator]
        editor.on_permission = lambda params: {
            "outcome": {"outcome": "selected", "optionId": "allow_once"},
            "_meta": {"newText": kept},
        }
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        result = await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "bump"})
        assert result["stopReason"] == "end_turn"
        assert (workspace / "nums.py").read_text() == kept
        chunks = editor.updates_for(sid, "agent_message_chunk")
        assert "I will read it again." in "".join(c["content"]["text"] for c in chunks)


async def test_a_deferred_edit_accepted_with_some_hunks_applies_only_those(
    workspace: Path, scripted_env: object
) -> None:
    old = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\nh = 8\ni = 9\nj = 10\n"
    (workspace / "nums.py").write_text(old)
    new = old.replace("a = 1", "a = 100").replace("j = 10", "j = 1000")
    kept = old.replace("j = 10", "j = 1000")  # the second hunk only
    call = {"name": "write_file", "input": {"path": "nums.py", "content": new}}
    steps = [
        {"match": "bump", "text": "Proposed.", "tool_calls": [call]},
        {"match": "bump", "text": "Waiting for review."},
        {"match": "re:only some hunks of your edit to nums.py", "text": "I will read it again."},
    ]
    async with running(  # type: ignore[operator]
        workspace, scripted_env(steps), options={"editMode": "deferred"}
    ) as editor:
        sid = (await editor.request("kiln/session/new", {}))["sessionId"]
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "bump"})
        assert (workspace / "nums.py").read_text() == old  # deferred: nothing landed yet
        (pending,) = (await editor.request("kiln/edit/list", {"sessionId": sid}))["edits"]
        resolved = await editor.request(
            "kiln/edit/resolve",
            {"proposalId": pending["proposalId"], "decision": "accept", "newText": kept},
        )
        assert resolved["outcome"] == "applied"
        assert (workspace / "nums.py").read_text() == kept
        # The next request tells the model only part of its edit landed (the script matches it).
        await editor.request("kiln/session/prompt", {"sessionId": sid, "prompt": "and now?"})
        chunks = editor.updates_for(sid, "agent_message_chunk")
        assert "I will read it again." in "".join(c["content"]["text"] for c in chunks)


async def test_a_mention_label_is_one_printable_line(workspace: Path, scripted_env: object) -> None:
    """A checkout may name a file `new\\nline.py`: its label went to the editor's completion list
    with the raw newline (two lines in a one-line widget). The label is the name as the tools list
    it (`\\n` escaped); `path` and `uri` stay the file's own, so picking it attaches that file."""
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "new\nline_zebra.py").write_text("def zebra_fn():\n    return 1\n")
    async with running(workspace, scripted_env([])) as editor:  # type: ignore[operator]
        await _wait_indexed(editor)
        found = await editor.request("kiln/complete/mentions", {"query": "zebra"})
        files = [i for i in found["items"] if i["kind"] == "file"]
        assert files and files[0]["label"] == "new\\nline_zebra.py", found
        assert files[0]["path"] == "pkg/new\nline_zebra.py"
        symbols = [i for i in found["items"] if i["kind"] == "symbol"]
        assert symbols and "\n" not in symbols[0]["detail"], found
        assert all("\n" not in i["label"] for i in found["items"]), found


async def test_a_mention_of_an_accented_name_finds_both_spellings(
    workspace: Path, scripted_env: object
) -> None:
    """macOS writes `é` in a file name as `e` + U+0301 (NFD), a keyboard types U+00E9 (NFC): an
    `@` query found only the file spelled as typed. Both are found by either spelling (and by
    `É`), each under its name on disk, so the `uri` picked opens that file."""
    decomposed, composed = "cafe\u0301_menu.py", "caf\u00e9_notes.py"
    (workspace / "pkg").mkdir()
    for name in (decomposed, composed):
        (workspace / "pkg" / name).write_text("def brew():\n    return 1\n")
    async with running(workspace, scripted_env([])) as editor:  # type: ignore[operator]
        await _wait_indexed(editor)
        for query in ("caf\u00e9", "cafe\u0301", "CAF\u00c9_", "\u00e9_no"):
            found = await editor.request("kiln/complete/mentions", {"query": query})
            files = {i["label"]: i for i in found["items"] if i["kind"] == "file"}
            expected = {decomposed, composed} if query != "\u00e9_no" else {composed}
            assert set(files) == expected, (query, found)
            for name, item in files.items():
                assert item["path"] == f"pkg/{name}"
                assert item["uri"] == (workspace / "pkg" / name).as_uri()
                assert (workspace / item["path"]).read_text().startswith("def brew")


async def test_an_index_file_swapped_under_the_server_is_not_read_through_its_views(
    workspace: Path, scripted_env: object, tmp_path: Path
) -> None:
    """The index files replaced under a running server after the index checked them (a checkout
    or a script that writes `.kiln/`). `@` completion opens the path again, and read `defs` as
    the file said: a planted view answered `planted` with a symbol that matches nothing of the
    kind (and a view can run any query on each read). Such a file is read as no index."""
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "real.py").write_text("def real_helper():\n    return 1\n")
    planted = tmp_path / "planted.db"
    conn = sqlite3.connect(planted)
    conn.executescript(
        "CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT);"
        "CREATE TABLE block_rows (id INTEGER PRIMARY KEY);"
        "CREATE TABLE refs (name TEXT, block_id INTEGER, file_id INTEGER);"
        "CREATE VIEW blocks AS SELECT 1 AS id, 'pkg/real.py' AS path, 'function' AS kind,"
        " 'real_helper' AS name, 1 AS start_line, 2 AS end_line, '' AS signature;"
        "CREATE VIEW defs AS SELECT 'planted_symbol' AS name, 1 AS block_id, 1 AS file_id;"
    )
    conn.close()
    async with running(workspace, scripted_env([])) as editor:  # type: ignore[operator]
        await _wait_indexed(editor)
        found = await editor.request("kiln/complete/mentions", {"query": "real_help"})
        assert [i["label"] for i in found["items"] if i["kind"] == "symbol"] == ["real_helper"]
        for name in ("index.db-wal", "index.db-shm"):  # the server's own stay open
            (workspace / ".kiln" / name).unlink(missing_ok=True)
        os.replace(planted, workspace / ".kiln" / "index.db")
        found = await editor.request("kiln/complete/mentions", {"query": "planted"})
        assert found == {"items": [], "indexed": False}, found


async def test_an_index_moved_over_the_servers_is_not_read_through_the_old_wal(
    workspace: Path, scripted_env: object, tmp_path: Path
) -> None:
    """A finished index moved over the server's, its `-wal` and `-shm` left beside it: SQLite
    read the old file's pages from them over the new one, so `@` completion offered a symbol
    the file now there does not hold (``indexer/wal_pairing.py``)."""
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "real.py").write_text("def real_helper():\n    return 1\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.py").write_text("def zebra_helper():\n    return 2\n")
    with Index(other) as idx:
        idx.update()
    async with running(workspace, scripted_env([])) as editor:  # type: ignore[operator]
        await _wait_indexed(editor)
        found = await editor.request("kiln/complete/mentions", {"query": "real_help"})
        assert [i["label"] for i in found["items"] if i["kind"] == "symbol"] == ["real_helper"]
        assert (workspace / ".kiln" / "index.db-wal").exists()
        os.replace(other / ".kiln" / "index.db", workspace / ".kiln" / "index.db")
        found = await editor.request("kiln/complete/mentions", {"query": "real_help"})
        assert not [i for i in found["items"] if i["kind"] == "symbol"], found
