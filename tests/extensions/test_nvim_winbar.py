"""The Neovim chat's window bar names the model of the next session, and a model id comes from
the provider: an OpenAI-compatible server's ``/models`` lists whatever ids it likes. The bar is
a statusline, where ``%{expr}`` is evaluated: an id holding ``%{luaeval(...)}`` ran Lua in the
editor as the bar was drawn, and one holding a lone ``%`` (``mini-50%``) failed with E539, so
picking it raised an error. A real ``nvim --embed`` with a UI, a real ``kiln lsp`` whose
provider is an OpenAI-compatible server on a loopback port, ``gM`` picking from its list."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.extensions.nvim_ui import Editor, nvim_env, nvim_path

pytestmark = [pytest.mark.e2e]

EVIL = "gpt-evil%{luaeval(\"vim.fn.setreg('a', 'PWNED') or 'x'\")}"
PERCENT = "mini-50%"


class Models(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(
            {"object": "list", "data": [{"id": m, "object": "model"} for m in (EVIL, PERCENT)]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Quiet."""


@pytest.fixture
def editor(tmp_path: Path, kiln_home: Path) -> Iterator[Editor]:
    nvim_path()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text("x = 1\n")
    script = tmp_path / "script.json"
    script.write_text("[]")
    env = nvim_env(kiln_home, tmp_path, script)
    env.update(
        KILN_PROVIDER="openai",
        OPENAI_API_KEY="test-key",
        OPENAI_BASE_URL=f"http://127.0.0.1:{httpd.server_address[1]}/v1",
    )
    ed = Editor(ws, env, ["calc.py"])
    yield ed
    ed.close()
    httpd.shutdown()


def _bar(ed: Editor) -> str:
    """The chat's window bar as drawn."""
    return str(
        ed.lua(
            "local w = require('kiln.chat').state.win; "
            "return vim.api.nvim_eval_statusline(vim.wo[w].winbar, "
            "{ winid = w, use_winbar = true, maxwidth = 1000 }).str"
        )
    )


def _pick(ed: Editor, model: str) -> None:
    listed = ed.lua(
        "local c = vim.lsp.get_clients({name='kiln'})[1]; "
        "return c:request_sync('kiln/models/list', vim.empty_dict(), 30000).result"
    )
    index = [m["id"] for m in listed["models"]].index(model) + 1
    ed.keys("gM")
    ed.wait_prompt("the model list")
    ed.keys(f"{index}<CR>")
    ed.wait("the picked model", lambda: ed.transcript_has(f"[kiln] model {model}: the next"))


def test_model_ids_from_the_provider_are_shown_not_evaluated(editor: Editor) -> None:
    ed = editor
    ed.wait(
        "the client to attach calc.py",
        lambda: ed.lua(
            "local c = vim.lsp.get_clients({name='kiln'})[1]; "
            "return c ~= nil and c.initialized and vim.lsp.buf_is_attached(0, c.id)"
        ),
    )
    ed.keys("\\kc")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    ed.keys("<Esc>")
    _pick(ed, EVIL)
    ed.nvim.command("redraw!")
    assert EVIL in _bar(ed)
    assert ed.nvim.funcs.getreg("a") == "", "the model id ran as code in the window bar"
    _pick(ed, PERCENT)
    assert PERCENT in _bar(ed)
    assert "E539" not in ed.messages()
    assert ed.nvim.funcs.getreg("a") == ""
