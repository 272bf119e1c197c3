""":KilnResume in Neovim shows a session as it was lived: a question asked about a selection
keeps its ``@file`` line under the question (the server replays the attachment as a second
``user_message_chunk``), the plan comes back on top, and a session whose first question had
several lines is one row in the picker. A real ``nvim --embed`` with a UI
against a real ``kiln lsp`` whose model is the in-package scripted one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.extensions.nvim_ui import Editor, workspace_editor

pytestmark = [pytest.mark.e2e]

SCRIPT = [
    {
        "match": "what is x",
        "text": "Planning.",
        "tool_calls": [
            {
                "name": "todo_write",
                "input": {"items": [{"id": "1", "content": "explain x", "status": "pending"}]},
            }
        ],
    },
    {"text": "x is one."},
]


@pytest.fixture
def editor(tmp_path: Path, kiln_home: Path) -> Editor:
    ed = workspace_editor(tmp_path, kiln_home, SCRIPT, {"calc.py": "x = 1\ny = 2\n"})
    yield ed
    ed.close()


def _conversation(lines: list[str]) -> list[str]:
    """The lines from the first question on, without the turn's closing line and blanks."""
    start = lines.index("## You")
    return [line for line in lines[start:] if line and not line.startswith("— ")]


def test_a_resumed_question_keeps_its_attachment_and_plan(editor: Editor) -> None:
    ed = editor
    ed.wait(
        "the client to attach calc.py",
        lambda: ed.lua(
            "local c = vim.lsp.get_clients({name='kiln'})[1]; "
            "return c ~= nil and c.initialized and vim.lsp.buf_is_attached(0, c.id)"
        ),
    )
    ed.keys(":1KilnAsk what is x<CR>")
    ed.wait("the answer", lambda: ed.transcript_has("— end_turn"))
    live = ed.transcript()
    assert live[:2] == ["Plan:", "  [ ] explain x"], live
    assert "  @calc.py:1-1" in live, live
    sid = ed.lua("return require('kiln.chat').state.session_id")

    ed.lua("require('kiln.chat').reset()")
    ed.lua("_G.done = false; require('kiln.chat').resume(..., function() _G.done = true end)", sid)
    ed.wait("the replay", lambda: ed.lua("return _G.done"))
    replayed = ed.transcript()
    assert replayed[:2] == ["Plan:", "  [ ] explain x"], replayed
    conv = _conversation(replayed)
    assert conv.count("## You") == 1, replayed
    assert conv[:3] == ["## You", "what is x", "  @calc.py"], replayed


def test_a_multi_line_question_is_one_row_in_the_picker(editor: Editor) -> None:
    ed = editor
    ed.keys(":KilnChat<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("i")
    ed.paste("why does this fail?\nTraceback (most recent call last):\n  boom")
    ed.keys("<CR>")
    ed.wait("the answer", lambda: ed.transcript_has("— "))
    # A picker plugin shows format_item's text as one row.
    ed.lua(
        "_G.rows = nil; vim.ui.select = function(items, opts, cb) "
        "_G.rows = vim.tbl_map(opts.format_item, items) end"
    )
    ed.keys("<Esc>:KilnResume<CR>")
    rows = ed.wait("the picker", lambda: ed.lua("return _G.rows"))
    assert len(rows) == 1 and "\n" not in rows[0], rows
    assert "why does this fail? ⏎ Traceback" in rows[0], rows
