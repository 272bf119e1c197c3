"""The Neovim commands against a new user's typos and a missing server: a mode that does not
exist is refused in one line (it used to be kept for the next session, whose start then failed
on every question), and a server that cannot start is said once (not twice, the second time
"kiln: kiln: …"). A real ``nvim --embed`` with a UI against a real ``kiln lsp`` whose model is
the in-package scripted one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.extensions.nvim_ui import Editor, nvim_env, nvim_path, workspace_editor

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def editor(tmp_path: Path, kiln_home: Path) -> Editor:
    ed = workspace_editor(tmp_path, kiln_home, [{"text": "Hello there."}])
    yield ed
    ed.close()


def test_an_unknown_mode_is_refused_and_the_next_question_runs(editor: Editor) -> None:
    ed = editor
    ed.keys(":KilnMode yolo!<CR>")
    ed.wait("the refusal", lambda: 'unknown mode "yolo!"' in ed.messages())
    ed.keys(":KilnEditMode later<CR>")
    ed.wait("the refusal", lambda: 'unknown editMode "later"' in ed.messages())
    assert "auto-edit" in ed.messages()  # the known ones are named
    ed.keys(":KilnChat<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("ihi<CR>")
    ed.wait("the turn to end", lambda: any(line.startswith("— ") for line in ed.transcript()))
    assert ed.transcript_has("Hello there."), ed.transcript()
    assert ed.transcript_has("— end_turn"), ed.transcript()


def test_a_missing_server_is_said_once(tmp_path: Path, kiln_home: Path) -> None:
    nvim_path()
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text("x = 1\n")
    script = tmp_path / "script.json"
    script.write_text("[]")
    ed = Editor(ws, nvim_env(kiln_home, tmp_path, script), ["calc.py"], cmd=["no-such-kiln-9"])

    def shown(what: str) -> str:
        """The messages once shown: a line longer than the screen asks Press ENTER."""
        ed.wait_prompt(what)
        while ed.mode()["blocking"]:
            ed.keys("<CR>")
        return ed.wait(what, lambda: "no-such-kiln-9" in ed.messages() and ed.messages())

    try:
        shown("setup's line")
        for command in ("KilnResume", "KilnEdits", "KilnSkills"):
            ed.nvim.command("messages clear")
            ed.keys(f":{command}<CR>")
            said = shown(f"{command}'s line")
            assert said.count("no-such-kiln-9") == 1 and "kiln: kiln:" not in said, said
    finally:
        ed.close()


def test_an_unknown_chat_layout_is_refused_in_one_line(editor: Editor) -> None:
    """`:KilnChat tab` opened a vertical split as if nothing were wrong (the word was dropped)."""
    ed = editor
    windows = len(ed.nvim.windows)
    ed.keys(":KilnChat tab<CR>")
    ed.wait("the refusal", lambda: 'unknown layout "tab"' in ed.messages())
    assert "vsplit, split or float" in ed.messages()
    assert len(ed.nvim.windows) == windows  # nothing opened
    ed.keys(":KilnChat float<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")


def test_a_mistyped_layout_in_setup_is_said_and_the_default_kept(editor: Editor) -> None:
    """`chat = { layout = "tab" }` (the review's word) opened a vertical split without a word,
    and `review = { layout = "vsplit" }` a tab: neither said the value was not understood."""
    ed = editor
    ed.nvim.exec_lua(
        "local c = require('kiln.config').options\n"
        "require('kiln').setup({ cmd = c.cmd, cmd_env = c.cmd_env, auto_start = false,"
        " keymaps = false, chat = { layout = 'tab' }, review = { layout = 'vsplit' } })"
    )
    said = ed.wait("the warnings", lambda: "review.layout" in ed.messages() and ed.messages())
    assert 'chat.layout "tab" is not vsplit, split or float: using vsplit' in said, said
    assert 'review.layout "vsplit" is not tab or float: using tab' in said, said
    layouts = ed.nvim.exec_lua(
        "local o = require('kiln.config').options return { o.chat.layout, o.review.layout }"
    )
    assert layouts == ["vsplit", "tab"]


def test_skills_install_without_an_id_says_what_it_needs(editor: Editor) -> None:
    """`:KilnSkills install` searched the registry for the word "install"."""
    ed = editor
    ed.keys(":KilnSkills install<CR>")
    said = ed.wait("the line", lambda: "needs a skill" in ed.messages() and ed.messages())
    assert "owner/name" in said, said


def test_kilnadd_with_another_word_than_clear_is_refused(editor: Editor) -> None:
    """`:KilnAdd clera` (a typo of `clear`) added the whole buffer as a context pill."""
    ed = editor
    ed.keys(":KilnAdd clera<CR>")
    said = ed.wait("the refusal", lambda: "clera" in ed.messages() and ed.messages())
    assert 'takes no word but "clear"' in said, said
    assert ed.lua("return #require('kiln.input').state.context") == 0
    ed.keys(":KilnAdd<CR>")  # the whole buffer, as before
    ed.wait("the pill", lambda: ed.lua("return #require('kiln.input').state.context") == 1)
    ed.keys(":KilnAdd clear<CR>")
    ed.wait("no pill", lambda: ed.lua("return #require('kiln.input').state.context") == 0)


def test_a_question_that_starts_with_a_path_is_asked(editor: Editor) -> None:
    """`/etc/hosts: why…` ran a skill named "etc" (none is installed: an error line) and the
    question typed was gone from the prompt."""
    ed = editor
    ed.keys(":KilnChat<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("i")
    ed.paste("/etc/hosts: why is it here")
    ed.keys("<Esc><CR>")
    ed.wait(
        "the turn to end",
        lambda: any(line.startswith(("— ", "[error]")) for line in ed.transcript()),
    )
    lines = ed.transcript()
    assert "/etc/hosts: why is it here" in lines, lines
    assert ed.transcript_has("Hello there."), lines
    assert not any(line.startswith("[error]") for line in lines), lines


def test_a_model_picked_during_a_turn_starts_a_new_session_with_the_next_question(
    tmp_path: Path, kiln_home: Path
) -> None:
    """`:KilnModel` during a turn said "the next question starts a new session", but the next
    question went on in the old session, with the old model (a session keeps its model)."""
    ed = workspace_editor(tmp_path, kiln_home, [{"sleep": 2}, "Answered."])
    try:
        ed.keys(":KilnChat<CR>")
        ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
        ed.keys("ione<CR>")
        first = ed.wait(
            "the turn's session",
            lambda: ed.lua("local s = require('kiln.chat').state return s.busy and s.session_id"),
        )
        ed.keys("<Esc>:KilnModel other-model<CR>")
        ed.wait("the line", lambda: ed.transcript_has("[kiln] model other-model"))
        ed.wait("the turn to end", lambda: ed.transcript_has("— end_turn"))
        ed.keys("itwo<CR>")
        ed.wait("the second turn", lambda: ed.transcript_has("two") and ed.transcript_has("— "))
        ed.wait("its end", lambda: not ed.lua("return require('kiln.chat').state.busy"))
        second = ed.lua("return require('kiln.chat').state.session_id")
        assert second and second != first, (first, second)
        assert ed.transcript()[:2] == ["## You", "two"], ed.transcript()
    finally:
        ed.close()
