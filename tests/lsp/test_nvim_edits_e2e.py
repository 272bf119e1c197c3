"""Neovim's own LSP client applies `kiln lsp`'s edits exactly: real headless Neovim
(`tests/lsp/nvim_edits.lua`, no Kiln plugin) holds buffers with astral characters, CJK,
combining marks and CRLF line ends; the scripted model edits text placed after them on the same
line; Neovim applies each `workspace/applyEdit` with the position encoding it negotiated, and
each buffer ends as the edit meant."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.nvim_run import oks, run_nvim

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).with_name("nvim_edits.lua")
# name -> (text, old_text, new_text)
FILES = {
    "astral.py": ("s = '😀😀' + x\n", "x\n", "y  # 漢\n"),
    "cjk.py": ("名前 = '値'  # e\u0301 old\n", "old", "済み 👍"),
    "combining.py": ("n = 'e\u0301e\u0301'; z = 1\nw = 2\n", "z = 1\nw", "z = 'ñ'\nv"),
    "crlf.py": ("one = '😀'\r\ntwo = 2\r\n", "two", "二つ"),
}


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_neovim_applies_the_servers_edits_exactly(
    tmp_path: Path, scripted_env: Any, encoding: str
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    expected = {}
    for name, (text, old, new) in FILES.items():
        (root / name).write_bytes(text.encode("utf-8"))
        expected[name] = text.replace(old, new, 1)
    (root / "expected.json").write_text(json.dumps(expected), encoding="utf-8")
    edits = [
        {"name": "edit_file", "input": {"path": name, "old_text": old, "new_text": new}}
        for name, (_, old, new) in FILES.items()
    ]
    env = scripted_env([{"text": "", "tool_calls": edits}, "ok"])
    stdout = run_nvim(SCRIPT, root, encoding, env, tmp_path)
    assert oks(stdout) == [f"ok {name}" for name in sorted(FILES)], stdout[-4000:]
    for name, (text, _, _) in FILES.items():  # Neovim's buffers changed, not the disk
        assert (root / name).read_bytes() == text.encode("utf-8")
