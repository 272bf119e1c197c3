"""Two Neovims on one session (each with its own ``kiln lsp``, one ``KILN_HOME``): when the
other one has continued the session, a question is refused with advice in Neovim's words
(:KilnResume, not the terminal's ``kiln run --resume``), and following it brings the other
turns in and lets the question run. Real ``nvim --embed`` UIs against real servers whose
model is the in-package scripted one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.extensions.nvim_ui import Editor, nvim_env, nvim_path

pytestmark = [pytest.mark.e2e]


def _closings(ed: Editor) -> int:
    return len([line for line in ed.transcript() if line.startswith("— ")])


def _resume(ed: Editor, sid: str) -> None:
    ed.lua("_G.done = false; require('kiln.chat').resume(..., function() _G.done = true end)", sid)
    ed.wait("the replay", lambda: ed.lua("return _G.done"))


def test_a_session_continued_elsewhere_says_kiln_resume(tmp_path: Path, kiln_home: Path) -> None:
    nvim_path()
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text("x = 1\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["one", "two", "three"]))
    env = nvim_env(kiln_home, tmp_path, script)
    a = Editor(ws, env, ["calc.py"])
    b = Editor(ws, env, ["calc.py"])
    try:
        a.keys(":KilnChat<CR>")
        a.wait("the prompt", lambda: a.nvim.current.buffer.options["filetype"] == "kiln-prompt")
        a.keys("ifirst q<CR>")
        a.wait("the first answer", lambda: _closings(a) >= 1)
        sid = a.lua("return require('kiln.chat').state.session_id")
        b.keys(":KilnChat<CR>")
        b.wait("the prompt", lambda: b.nvim.current.buffer.options["filetype"] == "kiln-prompt")
        _resume(b, sid)
        a.keys("second q<CR>")
        a.wait("the second answer", lambda: _closings(a) >= 2)

        b.keys("ithird q<CR>")
        refusal = b.wait(
            "the refusal",
            lambda: [line for line in b.transcript() if line.startswith("[error]")],
        )
        assert "changed in another Kiln process" in refusal[0], refusal
        assert ":KilnResume" in refusal[0] and "kiln run" not in refusal[0], refusal
        _resume(b, sid)
        assert b.transcript_has("second q"), b.transcript()
        b.keys("<Esc>:KilnChat<CR>ithird q<CR>")
        b.wait("the third answer", lambda: b.transcript_has("— end_turn"))
    finally:
        a.close()
        b.close()
