"""`:KilnAsk` and `:KilnEdit` from a file of another workspace: docs/neovim.md says each workspace
(nearest `root_markers`) gets its own server, and "sending from a file of another workspace
starts a new session there". Both commands sent from the chat's prompt, a scratch buffer that
talks to the workspace used last: the question about the second workspace's file went to the
first workspace's server, which answered "... is outside the workspace" and nothing was asked.
A real ``nvim --embed`` against real ``kiln lsp`` servers (one per workspace), the model the
in-package scripted one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.extensions.nvim_ui import Editor, workspace_editor

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def editor(tmp_path: Path, kiln_home: Path) -> Editor:
    other = tmp_path / "ws2"
    (other / ".git").mkdir(parents=True)
    (other / "b.py").write_text('B = "b"\n')
    ed = workspace_editor(tmp_path, kiln_home, ["Hello there.", "Again."])
    yield ed
    ed.close()


def turns_ended(ed: Editor) -> int:
    """Turns that ended, with an answer ("— end_turn") or an error line."""
    return sum(line.startswith(("— ", "[error]")) for line in ed.transcript())


def test_ask_and_edit_from_another_workspace_go_to_its_server(editor: Editor) -> None:
    ed = editor
    ed.keys(":KilnChat<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("ihi<CR>")
    ed.wait("the first turn", lambda: turns_ended(ed) == 1)
    ed.keys("<Esc>:wincmd p<CR>:edit ../ws2/b.py<CR>")
    ed.wait("b.py", lambda: ed.nvim.current.buffer.name.endswith("ws2/b.py"))
    ed.keys(":KilnAsk what is here<CR>")
    ed.wait("the asked turn", lambda: turns_ended(ed) == 2)
    lines = ed.transcript()
    assert not any(line.startswith("[error]") for line in lines), lines
    assert any(
        line.startswith("[kiln] now in") and line.endswith("ws2: a new session") for line in lines
    )
    assert lines[-2] == "— end_turn", lines
    roots = ed.lua("local r = {} for _, c in ipairs(vim.lsp.get_clients({ name = 'kiln' })) do"
                   " r[#r + 1] = vim.fs.basename(c.root_dir) end table.sort(r) return r")  # fmt: skip
    assert roots == ["ws", "ws2"]
    # Back in the first workspace, an edit of its file goes to its server again.
    ed.keys(":wincmd p<CR>:edit ../ws/calc.py<CR>")
    ed.wait("calc.py", lambda: ed.nvim.current.buffer.name.endswith("ws/calc.py"))
    ed.keys(":KilnEdit make it two<CR>")
    ed.wait("the edit turn", lambda: turns_ended(ed) == 3)
    lines = ed.transcript()
    assert not any(line.startswith("[error]") for line in lines), lines
    assert lines[-2] == "— end_turn", lines
    assert sum(line.startswith("[kiln] now in") for line in lines) == 2, lines


def test_a_pill_from_another_workspace_is_asked_of_its_server(editor: Editor) -> None:
    """`:KilnAdd` on a file of a second workspace, then a question typed in the prompt: it went
    to the first workspace's server, which refused the pill's file as outside its root."""
    ed = editor
    ed.keys(":KilnChat<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("ihi<CR>")
    ed.wait("the first turn", lambda: turns_ended(ed) == 1)
    ed.keys("<Esc>:wincmd p<CR>:edit ../ws2/b.py<CR>")
    ed.wait("b.py", lambda: ed.nvim.current.buffer.name.endswith("ws2/b.py"))
    ed.keys(":KilnAdd<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("iwhat is in it<CR>")
    ed.wait("the second turn", lambda: turns_ended(ed) == 2)
    lines = ed.transcript()
    assert not any(line.startswith("[error]") for line in lines), lines
    assert any(line.endswith("ws2: a new session") for line in lines), lines
    assert "  @b.py:1-1" in lines, lines


def test_compact_goes_to_the_server_that_holds_the_session(editor: Editor) -> None:
    """`/compact` after a `:KilnAdd` from a second workspace (whose server the prompt then talks
    to): it was sent to that server, which answered "session not found", while `/context`
    already asked the server holding the session."""
    ed = editor
    ed.keys(":KilnChat<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("ihi<CR>")
    ed.wait("the first turn", lambda: turns_ended(ed) == 1)
    ed.keys("<Esc>:wincmd p<CR>:edit ../ws2/b.py<CR>")
    ed.wait("b.py", lambda: ed.nvim.current.buffer.name.endswith("ws2/b.py"))
    ed.keys(":KilnAdd<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("i/compact<CR>")
    said = ("[kiln] compacted", "[kiln] nothing to compact", "[error]")
    ed.wait("the compaction's line", lambda: any(ln.startswith(said) for ln in ed.transcript()))
    lines = ed.transcript()
    assert not any(line.startswith("[error]") for line in lines), lines


def test_kilnedits_reviews_the_edits_of_the_server_that_holds_the_session(
    tmp_path: Path, kiln_home: Path
) -> None:
    """`:KilnEdits` after a `:KilnAdd` from a second workspace: the deferred edits were listed by
    that workspace's server, which holds none of the session's ("kiln: no pending edits"), and
    the edit waiting in the first one could not be reviewed."""
    other = tmp_path / "ws2"
    (other / ".git").mkdir(parents=True)
    (other / "b.py").write_text('B = "b"\n')
    edit = {"path": "calc.py", "old_text": "x = 1", "new_text": "x = 2"}
    steps = [
        {"match": "bump", "text": "", "tool_calls": [{"name": "edit_file", "input": edit}]},
        {"text": "It waits for your review."},
    ]
    ed = workspace_editor(tmp_path, kiln_home, steps)
    try:
        ed.keys(":KilnEditMode deferred<CR>:KilnChat<CR>")
        ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
        ed.keys("ibump it<CR>")
        ed.wait("the first turn", lambda: turns_ended(ed) == 1)
        ed.keys("<Esc>:wincmd p<CR>:edit ../ws2/b.py<CR>")
        ed.wait("b.py", lambda: ed.nvim.current.buffer.name.endswith("ws2/b.py"))
        ed.keys(":KilnAdd<CR>")
        ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
        ed.keys("<Esc>:KilnEdits<CR>")
        ed.wait("the review", lambda: "kiln://review" in ed.nvim.current.buffer.name)
        assert "no pending edits" not in ed.messages()
        ed.keys("a")
        ed.wait("the edit on disk", lambda: (ed.ws / "calc.py").read_text() == "x = 2\n")
    finally:
        ed.close()


def test_the_first_workspaces_session_is_closed_in_its_server(editor: Editor) -> None:
    """A question from a second workspace starts a new session there; the first one stayed live
    in the first workspace's server (its transcript and tools held) until that server stopped.
    It is now closed there as :KilnNew closes it: still stored, :KilnResume brings it back."""
    ed = editor
    ed.keys(":KilnChat<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("ihi<CR>")
    ed.wait("the first turn", lambda: turns_ended(ed) == 1)
    first = ed.lua("return require('kiln.chat').state.session_id")
    ed.keys("<Esc>:wincmd p<CR>:edit ../ws2/b.py<CR>")
    ed.wait("b.py", lambda: ed.nvim.current.buffer.name.endswith("ws2/b.py"))
    ed.keys(":KilnAsk what is here<CR>")
    ed.wait("the asked turn", lambda: turns_ended(ed) == 2)
    ed.lua(
        "_G.kiln_probe = nil; for _, c in ipairs(vim.lsp.get_clients({ name = 'kiln' })) do"
        " if vim.fs.basename(c.root_dir) == 'ws' then"
        " c:request('kiln/context/show', { sessionId = ... }, function(err, res)"
        " _G.kiln_probe = err and err.code or 'live' end) end end",
        first,
    )
    # -31001: the session is not live in that server (PROTOCOL.md)
    assert ed.wait("the first server's answer", lambda: ed.lua("return _G.kiln_probe")) == -31001
    stored = ed.lua(
        "local ids = {}; for _, c in ipairs(vim.lsp.get_clients({ name = 'kiln' })) do"
        " if vim.fs.basename(c.root_dir) == 'ws' then"
        " local r = c:request_sync('kiln/session/list', vim.empty_dict(), 10000)"
        " for _, s in ipairs(r.result.sessions) do ids[#ids + 1] = s.sessionId end end end"
        " return ids"
    )
    assert first in stored
