"""The `kiln/*` method list is generated from the registered handlers, and the VS Code
extension's table (`extensions/vscode/src/protocol/types.ts`, read as text) mirrors it."""

from __future__ import annotations

import re
from pathlib import Path

from lsp_server.lsp.methods import SERVER_TO_CLIENT, registered
from lsp_server.lsp.server import create_server

TYPES_TS = Path(__file__).parents[2] / "extensions" / "vscode" / "src" / "protocol" / "types.ts"


def _ts_methods() -> set[str]:
    text = TYPES_TS.read_text(encoding="utf-8")
    table = re.search(r"export const METHODS = \{(.*?)\} as const;", text, re.S)
    assert table is not None, "types.ts no longer has `export const METHODS = {...} as const;`"
    return set(re.findall(r'^\s*\w+:\s*"(kiln/[^"]+)",?\s*$', table.group(1), re.M))


def test_the_extension_mirrors_every_registered_method_and_nothing_else() -> None:
    server = create_server()
    served = set(registered(server))
    assert {"kiln/hello", "kiln/session/prompt", "kiln/complete/mentions"} <= served
    assert _ts_methods() == served | set(SERVER_TO_CLIENT)


def test_every_registered_method_is_documented_in_protocol_md() -> None:
    doc = (Path(__file__).parents[2] / "lsp_server" / "PROTOCOL.md").read_text(encoding="utf-8")
    missing = [m for m in registered(create_server()) if f"`{m}`" not in doc]
    assert missing == []
