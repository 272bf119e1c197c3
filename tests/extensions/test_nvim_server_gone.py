"""A ``kiln lsp`` that stops under an idle Neovim chat, then the next question typed in the chat's
prompt. A real ``nvim --embed`` with a UI and a real ``kiln lsp``.

- The prompt is a scratch buffer: the server for the next question was started for *its*
  "workspace" (``vim.fs.root`` of ``kiln:/`` is ``.``, which the server took for ``/``), not for
  the workspace the chat was on. It starts again where it ran.
- A server killed by SIGKILL (the OOM killer) exits with code 0 and signal 9: the chat said
  nothing (only a non-zero code or a running turn was said), so the transcript went on as if its
  session were still there. Now it says the server exited. A server stopped (SIGTERM,
  `:LspRestart`) is no failure, but its session went with it: a line says the next question
  starts a new session (`:KilnResume` continues this one); it said nothing.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.extensions.nvim_ui import Editor, workspace_editor

pytestmark = [pytest.mark.e2e]

STEPS = [{"match": "first", "text": "first answer"}, {"match": "second", "text": "second answer"}]


def _ask(ed: Editor, question: str, answer: str) -> None:
    ed.keys(f"i{question}<CR>")
    ed.wait("the answer", lambda: ed.transcript_has(answer))
    ed.wait("the turn's end", lambda: ed.lua("return require('kiln.chat').state.busy") is False)
    ed.keys("<Esc>")


def _chat_then_kill(ed: Editor, sig: signal.Signals) -> None:
    ed.wait(
        "the client to attach calc.py",
        lambda: ed.lua(
            "local c = vim.lsp.get_clients({name='kiln'})[1]; "
            "return c ~= nil and c.initialized and vim.lsp.buf_is_attached(0, c.id)"
        ),
    )
    ed.keys("\\kc")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    _ask(ed, "first question", "first answer")
    (pid,) = ed.lua("return vim.api.nvim_get_proc_children(vim.fn.getpid())")
    os.kill(int(pid), sig)


def _clients_gone(ed: Editor) -> bool:
    return ed.lua("return #vim.lsp.get_clients({name='kiln'})") == 0


def test_the_next_question_starts_the_server_of_the_chat_workspace(
    tmp_path: Path, kiln_home: Path
) -> None:
    ed = workspace_editor(tmp_path, kiln_home, STEPS)
    try:
        _chat_then_kill(ed, signal.SIGTERM)
        ed.wait("the client to stop", lambda: _clients_gone(ed))
        assert not ed.transcript_has("[error]"), ed.transcript()  # a stop, not a failure
        notice = "[kiln] the server stopped: the next question starts a new session"
        ed.wait("the notice", lambda: ed.transcript_has(notice))
        elsewhere = tmp_path / "elsewhere"
        (elsewhere / ".git").mkdir(parents=True)
        ed.nvim.command(f"cd {elsewhere}")
        _ask(ed, "second question", "second answer")
        roots = ed.lua(
            "return vim.tbl_map(function(c) return c.root_dir end, vim.lsp.get_clients({name='kiln'}))"
        )
        assert roots == [str(ed.ws)], roots
    finally:
        ed.close()


def test_a_server_killed_while_idle_is_said_in_the_transcript(
    tmp_path: Path, kiln_home: Path
) -> None:
    ed = workspace_editor(tmp_path, kiln_home, STEPS)
    try:
        _chat_then_kill(ed, signal.SIGKILL)
        ed.wait_prompt("Neovim's own message about the client")  # it waits for Enter
        while ed.mode()["blocking"]:
            ed.keys("<CR>")
            time.sleep(0.1)
        ed.wait("the client to stop", lambda: _clients_gone(ed))
        line = "[error] kiln: the server exited (code 0, signal 9); see :LspLog"
        ed.wait("the line saying so", lambda: ed.transcript_has(line))
        _ask(ed, "second question", "second answer")  # a new server and session
    finally:
        ed.close()
