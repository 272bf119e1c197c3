""":KilnRestart restarts the server of the chat's workspace and the chat's session goes on in the
new one (the conversation so far is the model's context there too). A real ``nvim --embed``
against real ``kiln lsp`` servers; the model is the in-package scripted one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.extensions.nvim_ui import workspace_editor

pytestmark = [pytest.mark.e2e]

CLIENTS = "return vim.tbl_map(function(c) return c.id end, vim.lsp.get_clients({ name = 'kiln' }))"


def test_restart_keeps_the_session(tmp_path: Path, kiln_home: Path) -> None:
    steps = [{"match": "one", "text": "One answered."}, {"match": "two", "text": "Two answered."}]
    ed = workspace_editor(tmp_path, kiln_home, steps)
    try:
        ed.keys(":KilnChat<CR>")
        ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
        ed.keys("ione<CR>")
        ed.wait("answer one", lambda: ed.transcript_has("— end_turn"))
        sid = ed.lua("return require('kiln.chat').state.session_id")
        before = ed.lua(CLIENTS)
        assert len(before) == 1
        ed.keys("<Esc>:KilnRestart<CR>")
        ed.wait("the restart", lambda: ed.transcript_has("the server restarted"))
        after = ed.lua(CLIENTS)
        assert len(after) == 1 and after != before, (before, after)
        assert not ed.transcript_has("the next question starts a new session"), ed.transcript()
        assert ed.lua("return require('kiln.chat').state.session_id") == sid
        # calc.py, the file the chat came from, is attached to the new server
        assert ed.lua("return vim.lsp.buf_is_attached(vim.fn.bufnr('calc.py'), ...)", after[0])
        ed.keys("itwo<CR>")
        ed.wait("answer two", lambda: ed.transcript_has("Two answered."))
        assert ed.lua("return require('kiln.chat').state.session_id") == sid
        ed.wait("the turn to end", lambda: not ed.lua("return require('kiln.chat').state.busy"))
        ed.keys("/context<CR>")
        ed.wait("the context", lambda: ed.transcript_has("[kiln] context:"))
        line = next(x for x in ed.transcript() if "[kiln] context:" in x)
        assert ", 2 turns," in line, line
    finally:
        ed.close()


def test_restart_during_a_turn_is_refused(tmp_path: Path, kiln_home: Path) -> None:
    gate = tmp_path / "gate"
    ed = workspace_editor(tmp_path, kiln_home, [{"wait_for": str(gate)}, "Done."])
    try:
        ed.keys(":KilnChat<CR>")
        ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
        ed.keys("ihold<CR>")
        ed.wait("the turn", lambda: ed.lua("return require('kiln.chat').state.session_id"))
        before = ed.lua(CLIENTS)
        ed.keys("<Esc>:KilnRestart<CR>")
        ed.wait("the refusal", lambda: "a turn is running" in ed.messages())
        assert ed.lua(CLIENTS) == before
        gate.touch()
        ed.wait("the answer", lambda: ed.transcript_has("Done."))
    finally:
        gate.touch()
        ed.close()
