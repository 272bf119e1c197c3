""":KilnResume reaches every stored session, not only the newest 50: ``kiln/session/list``
answers in pages, and while more follow the picker's last row is "Load older sessions…", which
reads the next page and asks again with it added. A real ``nvim --embed`` with a UI against a
real ``kiln lsp`` whose model is the in-package scripted one; the picker is replaced, as a
picker plugin replaces ``vim.ui.select``, by one that records its rows and picks as a user
would."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.session_store import SessionStore
from tests.extensions.nvim_ui import Editor, workspace_editor

pytestmark = [pytest.mark.e2e]

OLDER = "Load older sessions…"

# Records each picker's rows; picks "Load older sessions…" while it is offered, then the oldest.
PICKER = """
_G.rows = {}
vim.ui.select = function(items, opts, on_choice)
  local shown = vim.tbl_map(opts.format_item, items)
  table.insert(_G.rows, shown)
  local pick
  for i, row in ipairs(shown) do
    if row == 'Load older sessions…' or (not pick and row:find('the oldest question', 1, true)) then
      pick = i
    end
  end
  vim.schedule(function() on_choice(pick and items[pick], pick) end)
end
"""


@pytest.fixture
def editor(tmp_path: Path, kiln_home: Path) -> Editor:
    ed = workspace_editor(tmp_path, kiln_home, [{"text": "The first answer."}])
    yield ed
    ed.close()


def test_the_oldest_of_61_sessions_is_reached_and_resumed(editor: Editor) -> None:
    ed = editor
    ed.keys(":KilnAsk the oldest question<CR>")
    ed.wait("the answer", lambda: ed.transcript_has("— end_turn"))
    oldest = ed.lua("return require('kiln.chat').state.session_id")
    store = SessionStore()  # the server's KILN_HOME
    try:
        for i in range(60):
            store.create(ed.ws.resolve(), provider="scripted", model="m", mode="ask",
                         title=f"stored {i}")  # fmt: skip
    finally:
        store.close()
    ed.lua("require('kiln.chat').reset()")

    ed.lua(PICKER)
    ed.keys("<Esc>:KilnResume<CR>")
    ed.wait("the replay", lambda: ed.transcript_has(f"— resumed session {oldest}"))
    assert ed.transcript_has("The first answer."), ed.transcript()
    first, second = ed.lua("return _G.rows")
    assert len(first) == 51 and first[-1] == OLDER, first[-3:]
    assert first[0].endswith("stored 59"), first[0]  # newest first
    assert not any("the oldest question" in row for row in first), first
    assert len(second) == 61 and OLDER not in second, second[-3:]
    assert second[-1].endswith("the oldest question"), second[-1]
