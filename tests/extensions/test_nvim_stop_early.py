"""`:KilnStop` (`<C-c>` in the prompt) pressed before the question's session exists: the first
question of a chat waits for `kiln/session/new` (slow while the server starts), and Stop then
said "no turn is running" and the question was asked anyway. A real ``nvim --embed`` with a
UI, a real ``kiln lsp`` behind a relay that holds the ``kiln/session/new`` answer."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.extensions.nvim_ui import Editor, nvim_env, nvim_path

pytestmark = [pytest.mark.e2e]

PROXY = Path(__file__).with_name("hold_proxy.py")


@pytest.fixture
def held_editor(tmp_path: Path, kiln_home: Path) -> Iterator[Editor]:
    nvim_path()
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text("x = 1\n")
    hold = tmp_path / "hold"
    hold.mkdir()
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps([{"match": "second", "text": "second answer"}, {"text": "MODEL-RAN"}])
    )
    cmd = [sys.executable, str(PROXY), str(hold), "kiln/session/new", "--"]
    cmd += [sys.executable, "-m", "lsp_server", "lsp"]
    ed = Editor(ws, nvim_env(kiln_home, tmp_path, script), ["calc.py"], cmd=cmd)
    ed.hold = hold  # type: ignore[attr-defined]
    yield ed
    (hold / "release").touch()
    ed.close()


def test_stop_before_the_session_exists_asks_nothing(held_editor: Editor) -> None:
    ed, hold = held_editor, held_editor.hold  # type: ignore[attr-defined]
    ed.wait(
        "the client to attach calc.py",
        lambda: ed.lua(
            "local c = vim.lsp.get_clients({name='kiln'})[1]; "
            "return c ~= nil and c.initialized and vim.lsp.buf_is_attached(0, c.id)"
        ),
    )
    ed.keys("\\kc")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("ifirst question<CR>")
    ed.wait("kiln/session/new asked", lambda: (hold / "asked").exists())
    assert ed.lua("return require('kiln.chat').state.busy") is True
    ed.keys("<C-c>")
    assert "no turn is running" not in ed.messages()
    (hold / "release").touch()
    ed.wait("the turn to end", lambda: ed.transcript_has("— cancelled"))
    assert ed.lua("return require('kiln.chat').state.busy") is False
    assert not ed.transcript_has("MODEL-RAN"), ed.transcript()
    # The session made meanwhile is the chat's: the next question is asked in it.
    sid = ed.lua("return require('kiln.chat').state.session_id")
    assert sid
    ed.keys("second question<CR>")
    ed.wait("the second answer", lambda: ed.transcript_has("second answer"))
    assert ed.lua("return require('kiln.chat').state.session_id") == sid
    assert not ed.transcript_has("MODEL-RAN"), ed.transcript()
