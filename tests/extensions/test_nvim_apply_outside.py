"""`ga` on a code block that names no file replaces the buffer of the file window you came from:
docs/neovim.md and `:help kiln-codeblock` hold it to files inside the workspace, as for a named
file. Any file shown there (`/etc/hosts`, a file of another project) was replaced and saved
after the one confirmation. A real ``nvim --embed`` against a real ``kiln lsp``, the model the
in-package scripted one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.extensions.nvim_ui import Editor, workspace_editor

pytestmark = [pytest.mark.e2e]

ANSWER = "Use this:\n\n```python\nnew = 2\n```\n"


@pytest.fixture
def editor(tmp_path: Path, kiln_home: Path) -> Editor:
    (tmp_path / "outside.txt").write_text("keep me\n")
    ed = workspace_editor(tmp_path, kiln_home, [ANSWER])
    yield ed
    ed.close()


def to_file_window(ed: Editor) -> None:
    """Into the window that is neither the transcript nor the prompt."""
    ed.lua(
        "local s = require('kiln.chat').state "
        "for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do "
        "if w ~= s.win and w ~= s.input_win and vim.api.nvim_win_get_config(w).relative == '' "
        "then vim.api.nvim_set_current_win(w) return end end"
    )


def to_transcript(ed: Editor) -> None:
    """Into the transcript from the file window: that window is the one `ga` falls back to."""
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.win)")


def test_a_block_without_a_name_replaces_only_a_workspace_file(editor: Editor) -> None:
    ed, outside = editor, editor.ws.parent / "outside.txt"
    ed.keys(":KilnChat<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("ihi<CR>")
    ed.wait("the answer", lambda: any(line.startswith("— ") for line in ed.transcript()))
    ed.keys("<Esc>")
    to_file_window(ed)
    ed.keys(":edit ../outside.txt<CR>")
    ed.wait("outside.txt", lambda: ed.nvim.current.buffer.name.endswith("/outside.txt"))
    to_transcript(ed)
    ed.keys("/new = 2<CR>ga")
    ed.wait("the refusal", lambda: "is not a file in this workspace" in ed.messages())
    assert "outside.txt" in ed.messages()
    assert not ed.mode()["blocking"]  # no confirmation was asked
    assert outside.read_text() == "keep me\n"
    # A workspace file in that window is still replaced, after the confirmation.
    to_file_window(ed)
    ed.keys(":edit ../ws/calc.py<CR>")
    ed.wait("calc.py", lambda: ed.nvim.current.buffer.name.endswith("ws/calc.py"))
    to_transcript(ed)
    ed.keys("/new = 2<CR>ga")
    ed.wait_prompt("the confirmation")
    ed.keys("y")
    ed.wait("the apply", lambda: (ed.ws / "calc.py").read_text() == "new = 2\n")
    assert outside.read_text() == "keep me\n"
