"""`@` completion in the Neovim chat against a server that is slow to answer: the editor goes on
taking keys while the question is out, and the menu opens for the word as it stands when the
answer comes. A real ``nvim --embed`` with a UI, a real ``kiln lsp`` behind a relay that holds
the ``kiln/complete/mentions`` answers until the test lets them through."""

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
def slow_editor(tmp_path: Path, kiln_home: Path) -> Iterator[Editor]:
    nvim_path()
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (ws / "cache.py").write_text("SIZE = 3\n")
    hold = tmp_path / "hold"
    hold.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "ok"}]))
    cmd = [sys.executable, str(PROXY), str(hold), "kiln/complete/mentions", "--"]
    cmd += [sys.executable, "-m", "lsp_server", "lsp"]
    ed = Editor(ws, nvim_env(kiln_home, tmp_path, script), ["calc.py"], cmd=cmd)
    ed.hold = hold  # type: ignore[attr-defined]
    yield ed
    (hold / "release").touch()
    ed.close()


def _asked(hold: Path) -> list[str]:
    path = hold / "asked"
    if not path.exists():
        return []
    return [json.loads(line)["query"] for line in path.read_text().splitlines()]


def test_typing_goes_on_while_the_mentions_answer_is_slow(slow_editor: Editor) -> None:
    ed, hold = slow_editor, slow_editor.hold  # type: ignore[attr-defined]
    ed.wait(
        "the client to attach calc.py",
        lambda: ed.lua(
            "local c = vim.lsp.get_clients({name='kiln'})[1]; "
            "return c ~= nil and c.initialized and vim.lsp.buf_is_attached(0, c.id)"
        ),
    )
    ed.keys("\\kc")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")

    ed.keys("ilook at @ca")
    ed.wait("the first question", lambda: _asked(hold))
    # The answer is held: the keys typed now reach the buffer at once, and each change of the
    # word asks again (a blocking request would hold them until it gave up).
    ed.keys("lc")
    ed.wait("the typed keys", lambda: ed.nvim.current.line == "look at @calc")
    ed.wait("the question for the whole word", lambda: _asked(hold)[-1:] == ["calc"])
    assert ed.nvim.funcs.pumvisible() == 0
    assert not (hold / "release").exists()

    (hold / "release").touch()
    # Only the answer for the word still typed opens the menu.
    ed.wait("the completion menu", lambda: ed.nvim.funcs.pumvisible() == 1)
    words = [i["word"] for i in ed.nvim.funcs.complete_info(["items"])["items"]]
    assert words and words[0] == "@calc.py", words
    assert "@cache.py" not in words, words
    ed.keys("<CR>")
    ed.wait("the pill", lambda: "[@calc.py]" in ed.nvim.current.window.options["winbar"])
    assert ed.nvim.current.line == "look at @calc.py"
    # Taking the item ends the completion: typing on does not reopen the menu.
    ed.keys(" please")
    ed.wait("the text", lambda: ed.nvim.current.line == "look at @calc.py please")
    assert ed.nvim.funcs.pumvisible() == 0
