"""The word an `@` mention completes in the Neovim prompt (`kiln.complete.trigger`, used by the
omnifunc popup and the blink.cmp source): Lua's `%w` matches ASCII only, so `@café` was no word
and the popup never asked the server (`kiln/complete/mentions` finds both spellings of `é`:
`tests/lsp/test_composer_e2e.py`). Real headless Neovim with the plugin on its runtime path."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.extensions.nvim_ui import nvim_path

PLUGIN = Path(__file__).resolve().parents[2] / "extensions" / "nvim"


def triggers(lines: list[str], tmp_path: Path) -> list[int | None]:
    script = tmp_path / "trigger.lua"
    script.write_text(
        "local c = require('kiln.complete')\n"
        f"local lines = vim.json.decode({json.dumps(json.dumps(lines))})\n"
        "local out = {}\n"
        "for i, line in ipairs(lines) do out[i] = c.trigger(line, false) or vim.NIL end\n"
        "io.stdout:write(vim.json.encode(out))\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [nvim_path(), "--headless", "--clean", "--cmd", f"set rtp+={PLUGIN}", "-l", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_mention_with_an_accent_is_a_word_to_complete(tmp_path: Path) -> None:
    lines = [
        "see @caf",
        "see @caf\u00e9",
        "see @cafe\u0301_m",
        "see @pkg/\u00e9t\u00e9",
        "see @caf \u00e9",
    ]
    assert triggers(lines, tmp_path) == [5, 5, 5, 5, None]
