"""The prompt's nvim-cmp source: docs/neovim.md says "With nvim-cmp a `kiln` source is registered
for the prompt". The plugin called ``cmp.setup.buffer`` while the user's file was the current
buffer (the prompt is made before its window opens), and nvim-cmp's ``setup.buffer`` configures
the current buffer: the file's completion sources became the kiln source alone (which offers
nothing outside the prompt), and the prompt got none. nvim-cmp is not installed here, so a
stand-in module does what its ``register_source`` and ``setup.buffer`` do (``setup.buffer``
keeps the config for ``nvim_get_current_buf()``, as nvim-cmp's own does); the rest is a real
``nvim --embed`` against a real ``kiln lsp``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.extensions.nvim_ui import Editor, workspace_editor

pytestmark = [pytest.mark.e2e]

CMP = """
local cmp = { sources = {}, buffers = {} }
cmp.register_source = function(name, source)
  cmp.sources[name] = source
  return 1
end
cmp.setup = {
  buffer = function(config)
    cmp.buffers[tostring(vim.api.nvim_get_current_buf())] = config
  end,
}
cmp.event = { on = function() end }
package.loaded.cmp = cmp
"""


@pytest.fixture
def editor(tmp_path: Path, kiln_home: Path) -> Editor:
    ed = workspace_editor(tmp_path, kiln_home, [{"text": "Hello there."}])
    yield ed
    ed.close()


def test_the_kiln_source_is_set_for_the_prompt_and_not_for_the_file(editor: Editor) -> None:
    ed = editor
    ed.lua(CMP)
    file_buf = ed.nvim.current.buffer.number
    ed.keys(":KilnChat<CR>")
    ed.wait("the prompt", lambda: ed.nvim.current.buffer.options["filetype"] == "kiln-prompt")
    prompt_buf = ed.nvim.current.buffer.number
    registered = ed.lua("return vim.tbl_keys(package.loaded.cmp.sources)")
    assert registered == ["kiln"]
    configured = ed.lua("return package.loaded.cmp.buffers")
    assert str(file_buf) not in configured, configured  # the file keeps its own sources
    assert configured == {str(prompt_buf): {"sources": [{"name": "kiln"}]}}, configured
