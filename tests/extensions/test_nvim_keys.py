"""The Neovim chat as a user drives it: real ``nvim --embed`` with a UI, keys and pastes only,
against a real ``kiln lsp`` whose model is the in-package scripted one.

One story per test function (a server start is the slow part): start without an error, paste a
multi-line question, ``@`` and ``/`` completion with context pills, the review in Normal mode, an
accepted edit saved before the agent's command runs (an unrelated unsaved buffer left alone),
stop during a review, reading while an answer streams, an inline edit of a selection, the
transcript's markdown highlighting; and a deferred edit reviewed per hunk with the model picker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.extensions.nvim_ui import Editor, workspace_editor

pytestmark = [pytest.mark.e2e]

CALC = "def add(a, b):\n    return a - b\n"
NUMS = "a = 1\n" + "".join(f"x{i} = {i}\n" for i in range(10)) + "z = 26\n"
NUMS_NEW = NUMS.replace("a = 1", "a = 100").replace("z = 26", "z = 2600")
CHECK = "python3 -c \"import calc; print('sum-is', calc.add(2, 3))\""


def _edit(old: str, new: str, path: str = "calc.py") -> dict:
    return {"name": "edit_file", "input": {"path": path, "old_text": old, "new_text": new}}


SCRIPT = [
    {"match": "paste-7", "text": "got both lines\n\n```lua\nlocal answer = 42\n```\n"},
    {"match": "def add(", "text": "saw calc"},
    {
        "match": "pdftk-marker-4411",
        "text": "skill loaded\n\n```python apply_me.py\nnew = 2\n```\n",
    },
    {"match": "fix add", "text": "Fixing.", "tool_calls": [_edit("a - b", "a + b")]},
    {
        "match": "edited calc.py",
        "text": "Checking.",
        "tool_calls": [{"name": "run_command", "input": {"command": CHECK}}],
    },
    {"match": "sum-is 5", "text": "The fix works."},
    {"match": "change it again", "text": "Again.", "tool_calls": [_edit("a + b", "a * b")]},
    {"match": "take-your-time", "sleep": 4},
    {"match": "take-your-time", "text": "slow answer done"},
    {
        "match": "rename add to plus",
        "text": "Renaming.",
        "tool_calls": [_edit("def add", "def plus")],
    },
    {"match": "edited calc.py", "text": "Renamed."},
    {
        "match": "bump both",
        "text": "Bumping.",
        "tool_calls": [{"name": "write_file", "input": {"path": "nums.py", "content": NUMS_NEW}}],
    },
    {"match": "only some hunks of your edit to nums.py", "text": "Kept the first hunk."},
    {
        "match": "bump later",
        "text": "Proposed.",
        "tool_calls": [{"name": "write_file", "input": {"path": "nums.py", "content": NUMS_NEW}}],
    },
    {"match": "the user will review it later", "text": "It waits for your review."},
]


@pytest.fixture
def editor(tmp_path: Path, kiln_home: Path) -> Editor:
    files = {
        "calc.py": CALC,
        "other.py": "x = 1\n",
        "nums.py": NUMS,
        "apply_me.py": "old = 1\n",
        ".kiln/skills/pdf/SKILL.md": "---\nname: pdf\ndescription: Fill in PDF forms.\n---\n"
        "Use pdftk-marker-4411.\n",
    }
    ed = workspace_editor(tmp_path, kiln_home, SCRIPT, files)
    yield ed
    ed.close()


def _turn_done(ed: Editor, count: int) -> bool:
    return sum(1 for line in ed.transcript() if line.startswith("— ")) >= count


def test_chat_flows_by_keys(editor: Editor) -> None:
    ed, ws = editor, editor.ws
    # Start: the server comes up for the file given on the command line, no error, no prompt.
    ed.wait(
        "the client to attach calc.py",
        lambda: ed.lua(
            "local c = vim.lsp.get_clients({name='kiln'})[1]; "
            "return c ~= nil and c.initialized and vim.lsp.buf_is_attached(0, c.id)"
        ),
    )
    assert not ed.mode()["blocking"]

    assert "did not start" not in ed.messages()

    # An unrelated unsaved change the agent's edits must not write to disk.
    ed.keys(":e other.py<CR>Ounsaved-by-user<Esc>:e calc.py<CR>")
    ed.wait("calc.py", lambda: ed.nvim.current.buffer.name.endswith("calc.py"))

    # Open the chat with the default mapping; the welcome text shows while it is empty.
    ed.keys("\\kc")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    welcome = ed.lua(
        "local ns = vim.api.nvim_get_namespaces()['kiln.welcome']; "
        "return #vim.api.nvim_buf_get_extmarks(require('kiln.chat').state.buf, ns, 0, -1, {})"
    )
    assert welcome == 1

    # A pasted multi-line question is sent whole.
    ed.keys("i")
    ed.paste("first line of the question\nsecond line paste-7")
    ed.keys("<CR>")
    ed.wait("the answer to the paste", lambda: ed.transcript_has("got both lines"))
    lines = ed.transcript()
    assert "first line of the question" in lines and "second line paste-7" in lines

    # Markdown with tree-sitter: the fenced lua block is highlighted as lua.
    lang = ed.lua(
        "local buf = require('kiln.chat').state.buf; "
        "local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false); "
        "for i, l in ipairs(lines) do if l:find('local answer', 1, true) then "
        "  vim.treesitter.get_parser(buf):parse(true); "
        "  for _, c in ipairs(vim.treesitter.get_captures_at_pos(buf, i - 1, 0)) do "
        "    if c.lang == 'lua' then return c.capture end end end end"
    )
    assert lang == "keyword", lang

    # @ completion from the index, accepted with <CR>: a context pill, then the question.
    ed.wait("the turn to end", lambda: _turn_done(ed, 1))
    ed.keys("@calc")  # still in Insert mode after sending
    ed.wait("the completion menu", lambda: ed.nvim.funcs.pumvisible() == 1)
    words = [i["word"] for i in ed.nvim.funcs.complete_info(["items"])["items"]]
    assert "@calc.py" in words, words
    ed.keys("<CR>")
    ed.wait("the pill", lambda: "[@calc.py]" in ed.nvim.current.window.options["winbar"])
    ed.keys(" explain it<CR>")
    ed.wait("the answer about calc", lambda: ed.transcript_has("saw calc"))
    ed.wait("the turn to end", lambda: _turn_done(ed, 2))
    assert ed.nvim.current.window.options["winbar"] == ""  # pills are cleared once sent

    # / completion lists the installed skill; choosing it loads the skill for the question.
    ed.keys("/pd")
    ed.wait("the command menu", lambda: ed.nvim.funcs.pumvisible() == 1)
    words = [i["word"] for i in ed.nvim.funcs.complete_info(["items"])["items"]]
    assert words == ["/pdf "], words
    ed.keys("<CR>fill the form<CR>")
    ed.wait("the skill answer", lambda: ed.transcript_has("skill loaded"))
    ed.wait("the turn to end", lambda: _turn_done(ed, 3))

    # Code block actions in the transcript: gy copies, ga applies to the named file.
    ed.keys("<Esc><C-w>k/new = 2<CR>gy")
    ed.wait("the copy", lambda: ed.nvim.funcs.getreg('"') == "new = 2\n")
    ed.keys("ga")
    ed.wait_prompt("the confirmation")
    ed.keys("y")
    ed.wait("the apply", lambda: (ws / "apply_me.py").read_text() == "new = 2\n")

    # An edit is reviewed in Normal mode; `a` accepts; the command the agent runs sees it.
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.input_win)")
    ed.keys("ifix add<CR>")
    ed.wait("the review", lambda: "kiln://review" in ed.nvim.current.buffer.name)
    assert ed.mode()["mode"] == "n"
    ed.keys("a")
    ed.wait_prompt("the command permission menu")
    ed.keys("1<CR>")
    ed.wait("the verdict", lambda: ed.transcript_has("The fix works."))
    ed.wait("the turn to end", lambda: _turn_done(ed, 4))
    assert (ws / "calc.py").read_text() == CALC.replace("a - b", "a + b")
    assert ed.transcript_has("— end_turn · modified: calc.py"), ed.transcript()
    assert (ws / "other.py").read_text() == "x = 1\n"
    assert ed.lua("return vim.bo[vim.fn.bufnr('other.py')].modified") is True

    # Stop during a review: the review closes and no tool line keeps a running icon.
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.input_win)")
    ed.keys("ichange it again<CR>")
    ed.wait("the review", lambda: "kiln://review" in ed.nvim.current.buffer.name)
    ed.keys(":KilnStop<CR>")
    ed.wait("the turn to end", lambda: _turn_done(ed, 5))
    tool_lines = [line for line in ed.transcript() if "edit_file: calc.py" in line]
    assert tool_lines[-1].lstrip()[0] in "✗⊘", tool_lines  # closed, no running/waiting icon
    assert not any(line.startswith(("  ? ", "  … ")) for line in ed.transcript())
    assert "a + b" in (ws / "calc.py").read_text()

    # Reading earlier output while an answer streams: the cursor stays where the user put it.
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.input_win)")
    ed.keys("itake-your-time<CR>")
    ed.wait("the question", lambda: ed.transcript_has("take-your-time"))
    ed.keys("<Esc><C-w>kgg")
    chat_win = ed.lua("return require('kiln.chat').state.win")
    ed.wait("the transcript window", lambda: ed.nvim.current.window.handle == chat_win)
    ed.wait("the slow answer", lambda: ed.transcript_has("slow answer done"))
    ed.wait("the turn to end", lambda: _turn_done(ed, 6))
    assert ed.nvim.current.window.cursor[0] == 1

    # Inline edit: select a line, <C-i>, type the instruction; accept in the review.
    ed.keys("<C-w>h")
    ed.wait("calc.py", lambda: ed.nvim.current.buffer.name.endswith("calc.py"))
    ed.keys("ggV<C-i>")
    ed.wait_prompt("the instruction prompt")
    ed.keys("rename add to plus<CR>")
    ed.wait("the review", lambda: "kiln://review" in ed.nvim.current.buffer.name)
    assert ed.mode()["mode"] == "n"
    ed.keys("a")
    ed.wait("the rename", lambda: ed.transcript_has("Renamed."))
    ed.wait("the turn to end", lambda: _turn_done(ed, 7))
    assert (ws / "calc.py").read_text().startswith("def plus(a, b):")

    # Review per hunk: drop the second hunk with `s`, accept the rest with `a`.
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.input_win)")
    ed.keys("ibump both<CR>")
    ed.wait("the review", lambda: "kiln://review" in ed.nvim.current.buffer.name)
    ed.keys("<Esc>/hunk 2<CR>s")
    ed.wait("hunk 2 dropped", lambda: any("[ ] hunk 2" in x for x in ed.nvim.current.buffer[:]))
    ed.keys("a")
    ed.wait("the answer", lambda: ed.transcript_has("Kept the first hunk."))
    assert (ws / "nums.py").read_text() == NUMS.replace("a = 1", "a = 100")
    # gi inserts the code block under the cursor into the file window, below its cursor.
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.win)")
    ed.keys("<Esc>gg/new = 2<CR>gi")
    ed.wait(
        "the insert",
        lambda: (
            "new = 2"
            in ed.lua("return vim.api.nvim_buf_get_lines(vim.fn.bufnr('calc.py'), 0, -1, false)")
        ),
    )

    # Built-in slash commands: /context reports on the session, /clear starts afresh.
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.input_win)")
    ed.keys("i/cont")
    ed.wait("the command menu", lambda: ed.nvim.funcs.pumvisible() == 1)
    ed.keys("<CR><CR>")
    ed.wait("the context report", lambda: ed.transcript_has("[kiln] context: "))
    assert ed.transcript_has("files modified: calc.py")
    ed.keys("/clear<Esc><CR>")
    ed.wait("an empty transcript", lambda: ed.transcript() == [""])

    # The mode picker: gm in the chat, a choice from the list; the window bar shows it.
    chat_win = ed.lua("return require('kiln.chat').state.win")
    ed.keys("gm")
    ed.wait_prompt("the mode list")
    ed.keys("2<CR>")
    ed.wait(
        "the mode in the window bar",
        lambda: "auto-edit" in ed.nvim.api.get_option_value("winbar", {"win": chat_win}),
    )
    assert "did not start" not in ed.messages()


def test_deferred_edit_per_hunk_and_model_picker_by_keys(editor: Editor) -> None:
    ed, ws = editor, editor.ws
    ed.wait(
        "the client to attach calc.py",
        lambda: ed.lua(
            "local c = vim.lsp.get_clients({name='kiln'})[1]; "
            "return c ~= nil and c.initialized and vim.lsp.buf_is_attached(0, c.id)"
        ),
    )
    ed.keys(":KilnEditMode deferred<CR>\\kc")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("ibump later<CR>")
    ed.wait("the answer", lambda: ed.transcript_has("It waits for your review."))
    ed.wait("the turn to end", lambda: _turn_done(ed, 1))
    assert (ws / "nums.py").read_text() == NUMS  # deferred: nothing written yet

    # :KilnEdits opens the pending edit; `s` drops hunk 2, `a` applies the rest.
    ed.keys("<Esc>:KilnEdits<CR>")
    ed.wait("the review", lambda: "kiln://review" in ed.nvim.current.buffer.name)
    assert ed.mode()["mode"] == "n"
    ed.keys("/hunk 2<CR>s")
    ed.wait("hunk 2 dropped", lambda: any("[ ] hunk 2" in x for x in ed.nvim.current.buffer[:]))
    ed.keys("a")
    kept = NUMS.replace("a = 1", "a = 100")
    ed.wait("only the kept hunk on disk", lambda: (ws / "nums.py").read_text() == kept)

    # The next question tells the model that only part of its edit landed.
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.input_win)")
    ed.keys("iwhat landed?<CR>")
    ed.wait("the answer", lambda: ed.transcript_has("Kept the first hunk."))
    ed.wait("the turn to end", lambda: _turn_done(ed, 2))

    # gM lists the server's models (kiln/models/list); picking one sets the next session's.
    ed.keys("<Esc>gM")
    ed.wait_prompt("the model list")
    ed.keys("1<CR>")  # a free-text field would have taken "1" as the model's name
    ed.wait("the listed model", lambda: ed.transcript_has("[kiln] model scripted: the next"))
    # "other…" (after the listed models) still takes any id, typed.
    ed.keys("gM")
    ed.wait_prompt("the model list")
    ed.keys("2<CR>")
    ed.wait_prompt("the model name prompt")
    ed.keys("<C-u>my-own-model<CR>")
    ed.wait("the typed model", lambda: ed.transcript_has("[kiln] model my-own-model: the next"))
