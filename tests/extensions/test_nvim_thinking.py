"""The Neovim transcript shows a reasoning model's thinking (``agent_thought_chunk`` updates)
as a quote apart from the answer: real headless Neovim, the plugin's transcript module fed the
updates a server sends."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.extensions.nvim_ui import PLUGIN, nvim_path

pytestmark = [pytest.mark.e2e]

SCRIPT = """
vim.opt.rtp:prepend(%r)
local t = require('kiln.transcript')
t.buffer()
for _, u in ipairs(vim.json.decode(%r)) do t.render(u) end
io.stdout:write(vim.json.encode(t.lines()))
"""


def test_thinking_is_a_quote_before_the_answer(tmp_path: Path) -> None:
    chunk = lambda kind, text: {"sessionUpdate": kind, "content": {"type": "text", "text": text}}  # noqa: E731
    updates = [chunk("agent_thought_chunk", "check the "), chunk("agent_thought_chunk", "file\nthen answer"),
               chunk("agent_message_chunk", "A is 1.")]  # fmt: skip
    script = tmp_path / "t.lua"
    script.write_text(SCRIPT % (str(PLUGIN), json.dumps(updates)))
    out = subprocess.run([nvim_path(), "--headless", "--clean", "-l", str(script)],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    lines = json.loads(out.stdout or out.stderr)
    assert lines == ["> (thinking)", "> check the file", "> then answer", "", "A is 1."], lines
