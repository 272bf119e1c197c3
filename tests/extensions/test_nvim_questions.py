"""What the Neovim plugin shows when the server asks: a command's permission question carries
what a yes approves as the server words it (the parsed parts of the line, "with network access",
a memory's text), as the VS Code panel shows it. A real ``nvim --embed`` with a UI against a
real ``kiln lsp`` whose model is the in-package scripted one; the questions go through
``vim.ui.select`` as a picker plugin that replaces it would receive them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.extensions.nvim_ui import Editor, workspace_editor

pytestmark = [pytest.mark.e2e]

CURL = "curl -s http://example.com/x > out.txt && echo done"
SCRIPT = [
    {
        "match": "fetch it",
        "text": "Fetching.",
        "tool_calls": [{"name": "run_command", "input": {"command": CURL}}],
    },
    {"match": "re:rejected|denied|refused", "text": "Not fetched."},
    {
        "match": "keep in mind",
        "text": "Noting.",
        "tool_calls": [{"name": "remember", "input": {"text": "tests run with tox-42"}}],
    },
    {"text": "Not noted."},
]

# A picker that records each question and answers "Reject" (as telescope-ui-select would,
# it gets the prompt and the items).
PICKER = """
_G.asked = {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(_G.asked, opts.prompt)
  for _, it in ipairs(items) do
    if it.optionId == 'reject_once' then return on_choice(it) end
  end
end
"""


@pytest.fixture
def editor(tmp_path: Path, kiln_home: Path) -> Editor:
    ed = workspace_editor(tmp_path, kiln_home, SCRIPT)
    yield ed
    ed.close()


def _turns(ed: Editor) -> list[str]:
    return [line for line in ed.transcript() if line.startswith("— ")]


def test_a_command_question_shows_its_parts_and_network(editor: Editor) -> None:
    ed = editor
    ed.lua(PICKER)
    ed.keys(":KilnChat<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("ifetch it<CR>")
    ed.wait("the turn to end", lambda: len(_turns(ed)) >= 1)
    asked = ed.lua("return _G.asked")
    assert len(asked) == 1, asked
    lines = asked[0].split("\n")
    assert lines[0].startswith("Kiln: run_command"), lines
    assert "  $ " + CURL in lines, lines
    assert "  - curl -s http://example.com/x  (writes out.txt)" in lines, lines
    assert "  - echo done" in lines, lines
    assert lines[-1] == "  with network access", lines
    assert not (ed.ws / "out.txt").exists()

    # remember: the text that would go into memory is in the question.
    ed.keys("keep in mind<CR>")
    ed.wait("the second turn to end", lambda: len(_turns(ed)) >= 2)
    asked = ed.lua("return _G.asked")
    assert len(asked) == 2 and "add to memory: tests run with tox-42" in asked[1], asked


LONG = "echo " + "a" * 10_000


def test_a_10000_character_command_is_asked_on_one_screen(tmp_path: Path, kiln_home: Path) -> None:
    """Neovim's own vim.ui.select printed the whole line in its prompt: a 10,000-character
    command filled screens of "-- More --" before the choices. The question now shows the
    line's start and says the whole of it is in the chat's transcript, which holds it."""
    steps = [
        {"text": "Running.", "tool_calls": [{"name": "run_command", "input": {"command": LONG}}]},
        {"text": "Not run."},
    ]
    ed = workspace_editor(tmp_path, kiln_home, steps)
    try:
        ed.lua(
            "_G.asked = {}; local pick = vim.ui.select; vim.ui.select = function(i, o, c)"
            " table.insert(_G.asked, o.prompt); return pick(i, o, c) end"
        )
        ed.keys(":KilnChat<CR>")
        ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
        ed.keys("irun it<CR>")
        ed.wait_prompt("the question")
        assert ed.mode()["mode"] != "rm", "the question scrolled past a screen"  # -- More --
        ed.keys("<Esc>")  # no answer: the request is cancelled, nothing runs
        ed.wait("the turn to end", lambda: len(_turns(ed)) >= 1)
        asked = ed.lua("return _G.asked")
        assert len(asked) == 1 and len(asked[0]) < 1000, len(asked[0])
        assert "characters in all: the whole of it is in the chat)" in asked[0], asked[0]
        assert "$ " + LONG in ed.transcript(), "the whole command is not in the transcript"
    finally:
        ed.close()
