"""Text synchronisation as LSP 3.17 defines it, seen through what the agent reads: incremental
changes in buffers holding line breaks only Python calls line breaks (form feed, U+2028), lone
CRs and CRLFs, astral characters in every position encoding, columns past the end of a line,
several changes (whole text and ranges) in one notification, a range given end first.

The server's copy of each buffer is observed exactly: the scripted model proposes a
`write_file` for every file in `deferred` edit mode, and `kiln/edit/list` shows each proposal's
`oldText`, the buffer as the server holds it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer

pytestmark = pytest.mark.e2e


def _pos(line: int, character: int) -> dict[str, int]:
    return {"line": line, "character": character}


def _edit(start: tuple[int, int], end: tuple[int, int], text: str) -> dict[str, Any]:
    return {"range": {"start": _pos(*start), "end": _pos(*end)}, "text": text}


def _cases(encoding: str) -> dict[str, tuple[str, list[list[dict[str, Any]]], str]]:
    """name -> (text opened, changes per didChange, text the editor then holds)."""
    quote = {"utf-8": 13, "utf-16": 9, "utf-32": 7}[encoding]  # column of the closing quote
    return {
        "formfeed.py": (  # LSP: line 1 is "def old():" (a form feed ends no line)
            "a = 1\x0c\ndef old():\n    pass\n",
            [[_edit((1, 4), (1, 7), "new")]],
            "a = 1\x0c\ndef new():\n    pass\n",
        ),
        "separator.py": (
            "s = 'a\u2028b\x85c'\nx = 1\n",
            [[_edit((1, 0), (1, 1), "y")]],
            "s = 'a\u2028b\x85c'\ny = 1\n",
        ),
        "lone_cr.txt": ("one\rtwo\rthree", [[_edit((2, 0), (2, 5), "3")]], "one\rtwo\r3"),
        "astral_crlf.py": (
            "s = '😀😀'\r\nend\r\n",
            [[_edit((0, quote), (0, quote), "X")], [_edit((1, 0), (1, 3), "fin")]],
            "s = '😀😀X'\r\nfin\r\n",
        ),
        "past_eol.txt": ("abc\ndef\n", [[_edit((0, 3), (0, 4), "")]], "abc\ndef\n"),
        "last_line.py": ("x = 1\nz = 1", [[_edit((1, 0), (1, 99), "y = 2")]], "x = 1\ny = 2"),
        "past_end.txt": ("a\n", [[_edit((7, 0), (9, 4), "tail")]], "a\ntail"),
        "mixed.txt": (
            "one\n",
            [[_edit((0, 0), (0, 3), "two"), {"text": "full\n"}, _edit((1, 0), (1, 0), "more")]],
            "full\nmore",
        ),
        "backwards.txt": ("abcdef", [[_edit((0, 3), (0, 0), "")]], "def"),
    }


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
async def test_buffers_follow_lsp_lines_and_positions(
    tmp_path: Path, scripted_env: Any, encoding: str
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    cases = _cases(encoding)
    for name in cases:
        (root / name).write_text("on disk\n", encoding="utf-8")
    writes = [{"name": "write_file", "input": {"path": n, "content": "x\n"}} for n in cases]
    server = await RawServer.start(root, scripted_env([{"text": "", "tool_calls": writes}, "ok"]))
    try:
        caps = {"general": {"positionEncodings": [encoding]}}
        options = {"index": False, "editMode": "deferred"}
        init = await server.initialize(root, capabilities=caps, initializationOptions=options)
        assert init["capabilities"]["positionEncoding"] == encoding
        for name, (text, changes, _) in cases.items():
            uri = (root / name).as_uri()
            doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
            server.notify("textDocument/didOpen", {"textDocument": doc})
            for version, change in enumerate(changes, start=2):
                params = {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": change,
                }
                server.notify("textDocument/didChange", params)
        sid = (await server.request("new", "kiln/session/new"))["result"]["sessionId"]
        reply = await server.request(
            "go", "kiln/session/prompt", {"sessionId": sid, "prompt": "go"}
        )
        assert reply["result"]["stopReason"] == "end_turn", reply
        edits = (await server.request("list", "kiln/edit/list", {}))["result"]["edits"]
    finally:
        await server.close()
    held = {e["path"]: e["oldText"] for e in edits}
    expected = {name: want for name, (_, _, want) in cases.items()}
    assert held == expected, json.dumps(held, indent=1, ensure_ascii=False)
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]


async def test_a_20_mb_buffer_is_edited_hovered_and_kept_out_of_the_index(
    tmp_path: Path, kiln_home: Path
) -> None:
    """A buffer of 20 MB (1.4 million lines) takes incremental changes at its end and answers
    hover on the changed line; over the index's cap, it is not indexed."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "names.py").write_text("def tail_renamed():\n    pass\n", encoding="utf-8")
    big = "".join(f"def f{n}(v):\n    return v\n" for n in range(700_000))
    big += "def tail_marker():\n    pass\n"
    assert len(big) > 20_000_000
    last = big.count("\n") - 2
    uri = (root / "big.py").as_uri()
    server = await RawServer.start(root, server_env(kiln_home))
    try:
        await server.initialize(root)
        await server.index_until(lambda s: s["state"] == "ready")
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": big}
        server.notify("textDocument/didOpen", {"textDocument": doc})
        for version, (start, end, text) in enumerate(
            [(4, 15, "tail_"), (9, 9, "renamed"), (16, 99, "():")], start=2
        ):
            params = {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [_edit((last, start), (last, end), text)],
            }
            server.notify("textDocument/didChange", params)
        hover = await server.request(
            "hover",
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": last, "character": 8}},
        )
    finally:
        await server.close()
    value = hover["result"]["contents"]["value"]
    assert "`tail_renamed` `names.py:1`" in value and "big.py" not in value, value
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]


async def test_changes_to_a_document_never_opened_are_one_log_line(
    tmp_path: Path, kiln_home: Path
) -> None:
    """A client typing in a document it never opened got a warning in its log per keystroke
    (pygls's KeyError); the changes are dropped with one info line for the document."""
    root = tmp_path / "ws"
    root.mkdir()
    server = await RawServer.start(root, server_env(kiln_home))
    try:
        await server.initialize(root, initializationOptions={"index": False})
        uri = (root / "never.py").as_uri()
        for version in range(2, 42):
            params = {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [_edit((0, 0), (0, 0), "x"), {"text": "whole"}],
            }
            server.notify("textDocument/didChange", params)
        assert (await server.request("hello", "kiln/hello"))["result"]["protocolVersion"] == 1
    finally:
        await server.close()
    logs = [
        m["params"] for m in server.messages if m.get("method") == "window/logMessage"
    ]  # fmt: skip
    about = [log for log in logs if "never.py" in log["message"]]
    assert len(about) == 1 and about[0]["type"] == 3, about  # one Info line
    assert "it was not opened" in about[0]["message"]
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]


async def test_document_versions_past_32_bits_keep_the_buffer(
    tmp_path: Path, kiln_home: Path
) -> None:
    """LSP types a version `integer` (32 bits), but clients count past it (a version per
    keystroke, a timestamp). lsprotocol refused such a didOpen and didChange, so the server
    never held the buffer: hover, the index and the agent read the disk instead."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def on_disk_name():\n    pass\n", encoding="utf-8")
    uri = (root / "app.py").as_uri()
    server = await RawServer.start(root, server_env(kiln_home))
    try:
        await server.initialize(root)
        await server.index_until(lambda s: s["state"] == "ready")
        text = "def typed_name():\n    pass\n"
        doc = {"uri": uri, "languageId": "python", "version": 2**31, "text": text}
        server.notify("textDocument/didOpen", {"textDocument": doc})
        params = {
            "textDocument": {"uri": uri, "version": 2**53},
            "contentChanges": [_edit((0, 9), (0, 9), "_again")],  # def typed_again_name
        }
        server.notify("textDocument/didChange", params)
        hover = await server.request(
            "hover",
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 6}},
        )
    finally:
        await server.close()
    assert hover.get("result"), hover
    assert "`typed_again_name` `app.py:1`" in hover["result"]["contents"]["value"], hover
    assert b"malformed" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]
