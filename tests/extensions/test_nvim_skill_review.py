"""The Neovim plugin's install confirmation names the tools a skill may use without asking,
whichever way its frontmatter writes them: a YAML list (`allowed-tools: [Bash, Read]`) was left
out of the prompt, so a new user saw nothing of what the install pre-approves. Real headless
Neovim running the plugin's own `review_lines`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.extensions.nvim_ui import nvim_path

PLUGIN = Path(__file__).resolve().parents[2] / "extensions" / "nvim"


def review_lines(tmp_path: Path, review: dict[str, object]) -> list[str]:
    script = tmp_path / "review.lua"
    script.write_text(
        f"vim.opt.rtp:prepend({json.dumps(str(PLUGIN))})\n"
        f"local review = vim.json.decode({json.dumps(json.dumps(review))})\n"
        "io.stdout:write(table.concat(require('kiln.skills').review_lines(review), '\\n'))\n"
    )
    proc = subprocess.run(
        [nvim_path(), "--headless", "--clean", "-l", str(script)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.parametrize(
    ("tools", "shown"),
    [
        (["Bash(git *)", "Read"], "  allowed tools: Bash(git *), Read"),
        ("Bash Read", "  allowed tools: Bash Read"),
        (None, "  allowed tools: none"),
        ([], "  allowed tools: none"),
    ],
)
def test_the_prompt_names_the_pre_approved_tools(
    tmp_path: Path, tools: object, shown: str
) -> None:
    review = {"id": "acme/notes", "version": "1.0.0", "files": [], "sizeBytes": 10}
    review["allowedTools"] = tools
    lines = review_lines(tmp_path, review)
    assert lines[0] == "Install acme/notes@1.0.0?", lines
    assert shown in lines, lines
