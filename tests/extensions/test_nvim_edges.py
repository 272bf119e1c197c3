"""The Neovim chat against what a model, a server and a user really send: multi-line commands
and error messages, Windows line ends, a buffer without a file. A real ``nvim --embed`` with a UI
is driven by keys against a real ``kiln lsp`` whose model is the in-package scripted one; one
story per test function (the server start is the slow part)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.extensions.nvim_ui import Editor, nvim_env, nvim_path

pytestmark = [pytest.mark.e2e]

TWO_LINES = "echo first-of-two\necho second-of-two"
SCRIPT = [
    {
        "match": "readonly please",
        "text": "Editing.",
        "tool_calls": [
            {
                "name": "edit_file",
                "input": {"path": "ro.py", "old_text": "y = 1", "new_text": "y = 2"},
            }
        ],
    },
    {"match": "re:rejected|read-only|not applied", "text": "It stays."},
    {
        "match": "run both",
        "text": "Running.",
        "tool_calls": [{"name": "run_command", "input": {"command": TWO_LINES}}],
    },
    {"match": "second-of-two", "text": "Both ran."},
    {
        "match": "crlf please",
        "text": "Commenting.",
        "tool_calls": [
            {
                "name": "edit_file",
                "input": {
                    "path": "win.py",
                    "old_text": "def add(a, b):\n    return a - b",
                    "new_text": "def add(a, b):\n    # the sum\n    return a + b",
                },
            }
        ],
    },
    {"match": "edited win.py", "text": "Commented."},
    {
        "match": "plan please",
        "text": "Planning.",
        "tool_calls": [
            {
                "name": "todo_write",
                "input": {
                    "items": [
                        {"id": "1", "content": "read the code\nthen the tests", "status": "pending"}
                    ]
                },
            }
        ],
    },
    {"text": "Planned."},  # the answer to the todo_write result
    {"match": "slow one", "sleep": 3},
    {"match": "slow one", "text": "slow done"},
    {"match": "break please", "raise": "bad_request", "message": "bad input\nsee line two-7"},
    {"match": "windows please", "text": "one\r\ntwo\r\n\r\nthree"},
    {
        "match": "fences please",
        "text": "````markdown\nIn your README:\n```python\nx = 41\n```\n````\n\n"
        "~~~sh\necho tilde-9\n~~~\n\n```text docs/secret.txt\noverwritten\n```\n",
    },
]


@pytest.fixture
def editor(tmp_path: Path, kiln_home: Path) -> Editor:
    nvim_path()
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text("x = 1\n")
    (ws / "ro.py").write_text("y = 1\n")
    (ws / "win.py").write_bytes(b"def add(a, b):\r\n    return a - b\r\n\r\nX = 1\r\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("keep me\n")
    (ws / "docs").symlink_to(tmp_path / "outside")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    ed = Editor(ws, nvim_env(kiln_home, tmp_path, script), ["calc.py"])
    yield ed
    ed.close()


def _turns(ed: Editor) -> list[str]:
    return [line for line in ed.transcript() if line.startswith("— ")]


def _open_chat(ed: Editor) -> None:
    ed.wait(
        "the client to attach calc.py",
        lambda: ed.lua(
            "local c = vim.lsp.get_clients({name='kiln'})[1]; "
            "return c ~= nil and c.initialized and vim.lsp.buf_is_attached(0, c.id)"
        ),
    )
    ed.keys("\\kc")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")


def test_multi_line_commands_errors_and_crlf_text(editor: Editor) -> None:
    ed = editor
    _open_chat(ed)
    # A command of two lines is asked like any other, and runs once allowed (its tool line in
    # the transcript is one line: a title with a newline used to break the permission request).
    ed.keys("irun both<CR>")
    ed.wait_prompt("the command permission menu")
    ed.keys("1<CR>")
    ed.wait("the answer", lambda: ed.transcript_has("Both ran."))
    ed.wait("the turn to end", lambda: len(_turns(ed)) >= 1)
    assert _turns(ed)[0] == "— end_turn", ed.transcript()
    tool = [line for line in ed.transcript() if "run_command:" in line]
    assert len(tool) == 1 and "first-of-two" in tool[0] and "second-of-two" in tool[0], tool
    assert tool[0].lstrip().startswith("✓"), tool

    # A file with Windows line ends: an edit quoting several lines (with \n, as the model read
    # them) is found, reviewed and applied, and the file keeps its \r\n.
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.input_win)")
    ed.keys("<Esc>icrlf please<CR>")
    ed.wait("the review", lambda: "kiln://review" in ed.nvim.current.buffer.name)
    ed.keys("a")
    ed.wait("the answer", lambda: ed.transcript_has("Commented."))
    assert (ed.ws / "win.py").read_bytes() == (
        b"def add(a, b):\r\n    # the sum\r\n    return a + b\r\n\r\nX = 1\r\n"
    )

    # A plan item of two lines is shown on one line at the top.
    ed.wait("the turn to end", lambda: len(_turns(ed)) >= 2)
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.input_win)")
    ed.keys("<Esc>iplan please<CR>")
    ed.wait("the plan", lambda: ed.transcript_has("Planned.") and len(_turns(ed)) >= 3)
    assert ed.transcript()[:2] == ["Plan:", "  [ ] read the code ⏎ then the tests"], ed.transcript()

    # :KilnNew while a turn runs is refused: the answer would land in the new transcript.
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.input_win)")
    ed.keys("islow one<CR>")
    ed.wait("the question", lambda: ed.transcript_has("slow one"))
    ed.keys("<Esc>:KilnNew<CR>")
    ed.wait("the refusal", lambda: "a turn is running" in ed.messages())
    ed.wait("the slow answer", lambda: len(_turns(ed)) >= 4)
    assert ed.transcript_has("slow one") and ed.transcript_has("slow done"), ed.transcript()
    assert _turns(ed)[-1] == "— end_turn"

    # A model error whose message has two lines is shown whole, and the turn still closes.
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.input_win)")
    ed.keys("ibreak please<CR>")
    ed.wait("the turn to end", lambda: len(_turns(ed)) >= 5)
    assert ed.transcript_has("bad input") and ed.transcript_has("see line two-7"), ed.transcript()

    # Windows line ends in streamed text leave no ^M at the ends of lines.
    ed.keys("windows please<CR>")
    ed.wait("the turn to end", lambda: len(_turns(ed)) >= 6)
    lines = ed.transcript()
    at = lines.index("one")
    assert lines[at : at + 4] == ["one", "two", "", "three"], lines
    assert not any("\r" in line for line in lines), lines

    # gy copies the block under the cursor: a ```` block quoting a ``` one whole, a ~~~ block.
    ed.keys("fences please<CR>")
    ed.wait("the turn to end", lambda: len(_turns(ed)) >= 7)
    ed.keys("<Esc><C-w>k/x = 41<CR>gy")
    ed.wait("the copy", lambda: "x = 41" in ed.nvim.funcs.getreg('"'))
    assert ed.nvim.funcs.getreg('"') == "In your README:\n```python\nx = 41\n```\n"
    ed.keys("/echo tilde-9<CR>gy")
    ed.wait("the second copy", lambda: ed.nvim.funcs.getreg('"') == "echo tilde-9\n")

    # ga on a block naming a file through a link to outside the workspace: refused, unasked.
    ed.keys("/^overwritten<CR>ga")
    ed.wait(
        "the refusal", lambda: "docs/secret.txt is not a file in this workspace" in ed.messages()
    )
    assert not ed.mode()["blocking"]
    assert (ed.ws.parent / "outside" / "secret.txt").read_text() == "keep me\n"


SUB_SCRIPT = [
    {
        "match": "Edit lines 2-2 of src/util.py: call it twice",
        "text": "Editing.",
        "tool_calls": [
            {
                "name": "edit_file",
                "input": {"path": "src/util.py", "old_text": "go()", "new_text": "go(); go()"},
            }
        ],
    },
    {"match": "edited src/util.py", "text": "Done."},
]


@pytest.fixture
def sub_editor(tmp_path: Path, kiln_home: Path) -> Editor:
    """Neovim started in a sub-folder of the workspace (the root is found upwards, by .git)."""
    nvim_path()
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "src" / "util.py").write_text("def f():\n    go()\n")
    (ws / "util.py").write_text("# a different file at the root\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SUB_SCRIPT))
    ed = Editor(ws / "src", nvim_env(kiln_home, tmp_path, script), ["util.py"])
    ed.ws = ws
    yield ed
    ed.close()


def test_inline_edit_names_the_file_from_the_workspace_root(sub_editor: Editor) -> None:
    ed, ws = sub_editor, sub_editor.ws
    ed.wait(
        "the client to attach util.py",
        lambda: ed.lua(
            "local c = vim.lsp.get_clients({name='kiln'})[1]; "
            "return c ~= nil and c.initialized and vim.lsp.buf_is_attached(0, c.id)"
        ),
    )
    # A buffer with no file: nothing the agent could edit, so nothing is sent.
    ed.keys(":enew<CR>iscratch text<Esc>V<C-i>")
    ed.wait("the refusal", lambda: "has no file" in ed.messages())
    assert not ed.transcript_has("## You")
    ed.keys(":bwipe!<CR>")
    ed.wait("util.py", lambda: ed.nvim.current.buffer.name.endswith("util.py"))

    # The cwd is src/, the root is ws/: the agent is told src/util.py, which its tools resolve.
    ed.keys("2GV<C-i>")
    ed.wait_prompt("the instruction prompt")
    ed.keys("call it twice<CR>")
    ed.wait("the review", lambda: "kiln://review" in ed.nvim.current.buffer.name)
    ed.keys("a")
    ed.wait("the answer", lambda: ed.transcript_has("Done."))
    assert (ws / "src" / "util.py").read_text() == "def f():\n    go(); go()\n"
    assert (ws / "util.py").read_text() == "# a different file at the root\n"


def test_the_float_chat_follows_a_resized_terminal(editor: Editor) -> None:
    ed = editor
    ed.keys(":KilnChat float<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("<Esc>")
    ed.nvim.ui_try_resize(60, 20)
    ed.wait(
        "the new size", lambda: ed.nvim.options["columns"] == 60 and ed.nvim.options["lines"] == 20
    )

    def inside() -> bool:
        for win in ("win", "input_win"):
            cfg = ed.lua(f"return vim.api.nvim_win_get_config(require('kiln.chat').state.{win})")
            row, col = cfg["row"], cfg["col"]
            if col + cfg["width"] + 2 > 60 or row + cfg["height"] + 2 > 20:
                return False
        return True

    ed.wait("both floats on the screen", inside)
    ed.nvim.ui_try_resize(140, 45)
    ed.wait(
        "the floats grown back",
        lambda: (
            ed.lua("return vim.api.nvim_win_get_config(require('kiln.chat').state.win).width") >= 84
        ),
    )


def test_a_read_only_buffer_is_left_as_it_is(editor: Editor) -> None:
    ed, ws = editor, editor.ws
    _open_chat(ed)
    ed.keys("<Esc>:sview " + str(ws / "ro.py") + "<CR>")
    ed.wait("ro.py read-only", lambda: ed.lua("return vim.fn.bufloaded('ro.py') == 1"))
    ed.lua("vim.api.nvim_set_current_win(require('kiln.chat').state.input_win)")
    ed.keys("ireadonly please<CR>")
    ed.wait("the review", lambda: "kiln://review" in ed.nvim.current.buffer.name)
    ed.keys("a")
    ed.wait("the answer", lambda: ed.transcript_has("It stays."))
    lines = ed.lua("return vim.api.nvim_buf_get_lines(vim.fn.bufnr('ro.py'), 0, -1, false)")
    assert lines == ["y = 1"], lines
    assert ed.lua("return vim.bo[vim.fn.bufnr('ro.py')].modified") is False
    assert (ws / "ro.py").read_text() == "y = 1\n"
