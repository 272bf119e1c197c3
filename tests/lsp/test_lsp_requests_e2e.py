"""Every standard LSP request `kiln lsp` advertises, called as an odd client would call it
(valid, edge and malformed params), is answered with a result or a JSON-RPC error, never
-32603; requests it does not advertise are -32601; odd notifications get no answer. An error the
client is answered with is not also a warning in the editor's log (`window/logMessage`)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.conftest import server_env
from tests.lsp.raw_client import RawServer

pytestmark = pytest.mark.e2e

UNADVERTISED = [
    "textDocument/definition", "textDocument/references", "textDocument/completion",
    "textDocument/documentSymbol", "workspace/symbol", "textDocument/formatting",
    "textDocument/codeAction", "textDocument/semanticTokens/full", "textDocument/inlayHint",
    "textDocument/diagnostic", "workspace/willRenameFiles", "textDocument/rename",
]  # fmt: skip


def _hover_params(uri: str) -> list[Any]:
    def at(line: Any, character: Any) -> dict[str, Any]:
        return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}

    return [
        at(0, 5), at(1, 0), at(0, 10_000), at(99, 0), at(2**31 - 1, 2**31 - 1),  # edges
        at(-1, 0), at(0, -7), at(2**31, 0), at(2**53, 0), at(None, 0), at([], {}),  # malformed
        {"textDocument": {"uri": uri}}, {"position": {"line": 0, "character": 0}},
        {"textDocument": {"uri": 7}, "position": {"line": 0, "character": 0}}, None, [], "x",
    ]  # fmt: skip


async def test_advertised_requests_answer_and_others_are_method_not_found(
    workspace: Path, kiln_home: Path
) -> None:
    ids = itertools.count()
    server = await RawServer.start(workspace, server_env(kiln_home))
    try:
        init = await server.initialize(workspace, initializationOptions={"index": False})
        providers = {k for k in init["capabilities"] if k.endswith("Provider")}
        assert providers == {"hoverProvider"}, providers  # no commands: no executeCommand
        uri = (workspace / "app.py").as_uri()
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": "def greet():\n"}
        server.notify("textDocument/didOpen", {"textDocument": doc})
        answers: list[tuple[str, Any, dict[str, Any]]] = []
        calls = [("textDocument/hover", p) for p in _hover_params(uri)]
        calls += [
            ("workspace/executeCommand", p)
            for p in ({"command": "kiln.nope"}, {"command": 5}, {}, {"arguments": [1]})
        ]
        calls += [(m, {"textDocument": {"uri": uri}}) for m in UNADVERTISED]
        for method, params in calls:
            answers.append((method, params, await server.request(next(ids), method, params)))
        # Odd notifications: never answered, and the server goes on.
        for method, params in [
            ("textDocument/didChange", {"textDocument": {"uri": uri, "version": 0}}),
            ("textDocument/didSave", {"textDocument": {"uri": uri + "x"}, "text": "y"}),
            ("textDocument/didClose", {"textDocument": {"uri": "untitled:never"}}),
            ("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri, "type": 9}]}),
            ("workspace/didChangeWorkspaceFolders", {"event": {"added": [], "removed": []}}),
            ("workspace/didChangeConfiguration", {"settings": None}),
            ("$/setTrace", {"value": "verbose"}),
            ("window/workDoneProgress/cancel", {"token": "never-made"}),
        ]:
            server.notify(method, params)
        hello = await server.request("last", "kiln/hello")
        assert hello["result"]["protocolVersion"] == 1
    finally:
        await server.close()
    for method, params, answer in answers:
        assert ("result" in answer) != ("error" in answer), (method, params, answer)
        code = answer.get("error", {}).get("code")
        if method in UNADVERTISED:
            assert code == -32601, (method, answer)
        elif method == "workspace/executeCommand":  # not advertised: there are no commands
            assert code == -32601, (params, answer)
        else:
            assert code in (None, -32602), (params, answer)
    asked = {"init", "last", *range(len(calls))}
    assert {m["id"] for m in server.messages if "method" not in m} == asked
    warnings = [
        m["params"]["message"]
        for m in server.messages
        if m.get("method") == "window/logMessage" and m["params"]["type"] <= 2
    ]
    assert not [w for w in warnings if "Not Found" in w or "Invalid Params" in w], warnings
    assert b"Traceback" not in server.stderr, server.stderr.decode(errors="replace")[-3000:]


async def test_hover_shows_names_and_paths_as_code_not_markdown(
    tmp_path: Path, kiln_home: Path
) -> None:
    """Hover is Markdown; the names and paths in it come from the repository. A file named
    `[docs](https://example.com).py` was a link in the editor's hover, and a backtick in a name
    ended its code span: both are now code spans, fenced past any backtick they hold."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "[docs](https:⁄⁄example.com)_x.py").write_text("def hover_target():\n    pass\n")
    (root / "tick`s.py").write_text("def hover_target():\n    pass\n")
    server = await RawServer.start(root, server_env(kiln_home))
    try:
        await server.initialize(root)
        await server.index_until(lambda s: s["state"] == "ready")
        uri = (root / "probe.py").as_uri()
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": "hover_target()\n"}
        server.notify("textDocument/didOpen", {"textDocument": doc})
        params = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 3}}
        hover = await server.request("hover", "textDocument/hover", params)
    finally:
        await server.close()
    rows = sorted(hover["result"]["contents"]["value"].splitlines())
    assert rows == [
        "- `hover_target` `[docs](https:⁄⁄example.com)_x.py:1`",
        "- `hover_target` ``tick`s.py:1``",
        "- `probe` `probe.py:1`",
    ], rows


async def test_hover_is_plain_text_for_a_client_that_shows_no_markdown(
    workspace: Path, kiln_home: Path
) -> None:
    """A client whose `textDocument.hover.contentFormat` is `["plaintext"]` was sent Markdown
    anyway and showed its backticks; it now gets plain text, the same lines without markup.
    The first format the client lists is its preference; naming none means Markdown."""
    kinds = {}
    for formats in (["plaintext"], ["plaintext", "markdown"], ["markdown", "plaintext"], None):
        caps = {"textDocument": {"hover": {"contentFormat": formats}}} if formats else {}
        server = await RawServer.start(workspace, server_env(kiln_home))
        try:
            await server.initialize(workspace, capabilities=caps)
            await server.index_until(lambda s: s["state"] == "ready")
            uri = (workspace / "probe.py").as_uri()
            doc = {"uri": uri, "languageId": "python", "version": 1, "text": "greet()\n"}
            server.notify("textDocument/didOpen", {"textDocument": doc})
            params = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 2}}
            hover = (await server.request("hover", "textDocument/hover", params))["result"]
        finally:
            await server.close()
        kinds[str(formats)] = hover["contents"]["kind"]
        rows = sorted(hover["contents"]["value"].splitlines())
        if hover["contents"]["kind"] == "plaintext":
            assert rows == ["- greet app.py:1", "- probe probe.py:1"], rows
    assert kinds == {
        "['plaintext']": "plaintext",
        "['plaintext', 'markdown']": "plaintext",
        "['markdown', 'plaintext']": "markdown",
        "None": "markdown",
    }, kinds
