"""Neovim's own LSP client keeps `kiln lsp`'s copy of its buffers exact: real headless Neovim
(`tests/lsp/nvim_sync.lua`, no Kiln plugin) edits buffers holding astral characters, CJK, a form
feed and CRLF line ends, with each position encoding it offers; the server's copy, read back
as the scripted model's deferred `write_file` proposals (`kiln/edit/list` oldText), equals each
buffer's text. pygls's own line splitting broke the form-feed buffer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.lsp.nvim_run import oks, run_nvim

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).with_name("nvim_sync.lua")
FILES = {
    "astral.py": "s = '😀😀'\n\nold = 1\n",
    "cjk.py": "名前 = '値'\n",
    "formfeed.py": "a = 1\x0c\ndef old():\n    pass\n",
    "crlf.py": "one\r\nTWO\r\n",
}


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_neovim_buffers_reach_the_server_exactly(
    tmp_path: Path, scripted_env: Any, encoding: str
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for name, text in FILES.items():
        (root / name).write_bytes(text.encode("utf-8"))
    writes = [{"name": "write_file", "input": {"path": n, "content": "x\n"}} for n in FILES]
    env = scripted_env([{"text": "", "tool_calls": writes}, "ok"])
    stdout = run_nvim(SCRIPT, root, encoding, env, tmp_path)
    assert oks(stdout) == [f"ok {name}" for name in sorted(FILES)], stdout[-4000:]
