"""`kiln run`'s terminal view prints model and tool text as text: markup-like strings such as
a grep pattern ``[/a-z]`` must not be parsed by rich (it used to crash with MarkupError)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

PATTERN = "[/a-z]+"
COMMAND = "echo '[bold]not bold[/] [/red]'"


def test_markup_in_titles_arguments_and_output_is_printed_verbatim(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "paths.txt").write_text("a/b\n[/etc]\n", encoding="utf-8")
    script = [
        {"tool_calls": [{"name": "grep", "input": {"pattern": PATTERN}}]},
        {"tool_calls": [{"name": "run_command", "input": {"command": COMMAND}}]},
        {"tool_calls": [{"name": "read_file", "input": {"path": "[/missing]"}}]},
        "Done: [/a-z] matched [bold]two[/bold] lines.",
    ]
    script_path = tmp_path / "script.json"
    script_path.write_text(json.dumps(script), encoding="utf-8")
    env = {**os.environ, "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script_path),
           "KILN_HOME": str(tmp_path / "home")}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "run", "find paths", "--mode", "yolo"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "MarkupError" not in proc.stderr and "Traceback" not in proc.stderr
    assert f"▶ grep: {PATTERN}" in proc.stderr  # the title, as the model wrote it
    assert f"▶ run_command: {COMMAND}" in proc.stderr
    assert "▶ read_file: [/missing]" in proc.stderr
    assert "message: [/missing] does not exist" in proc.stderr  # an error line, verbatim
    assert "Done: [/a-z] matched [bold]two[/bold] lines." in proc.stdout
