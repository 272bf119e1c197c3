"""The `task` tool through a real `kiln run`: a child session explores with its own context,
cannot change the workspace, and its answer comes back to the parent introduced as a
sub-agent's, wrapped as external content (agent/subagent.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.security.scripted_run import kiln_run, stream_transcript, tool_results


def test_a_sub_agent_reads_answers_and_cannot_edit(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def hello_world():\n    return 'hi'\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [{"name": "task", "input": {"description": "where is the greeting?"}}]},
        {"match": "Explore read-only",
         "tool_calls": [{"name": "grep", "input": {"pattern": "def hello_world"}}]},
        {"tool_calls": [{"name": "edit_file", "input": {
            "path": "app.py", "old_text": "'hi'", "new_text": "'changed'"}}]},
        "the greeting is hello_world in app.py:1",
        "done",
    ]))  # fmt: skip
    proc = kiln_run(root, home=tmp_path, kiln_home=kiln_home, script=script,
                    mode="auto-edit", output="stream-json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (answer,) = tool_results(stream_transcript(proc))
    assert answer.startswith("sub-agent ") and "(3 steps)" in answer
    # the child's words, wrapped as data: it read the repository to write them
    assert answer.endswith("\nthe greeting is hello_world in app.py:1\n</external_content>")
    assert (root / "app.py").read_text() == "def hello_world():\n    return 'hi'\n"
    shown = subprocess.run(
        [sys.executable, "-m", "lsp_server", "sessions", "show", answer.split()[1]],
        env={**os.environ, "KILN_HOME": str(kiln_home)}, capture_output=True, text=True,
        timeout=60,
    ).stdout  # fmt: skip
    assert "app.py:1: def hello_world():" in shown  # its grep ran, in its own context
    assert "message: unknown tool 'edit_file'" in shown  # read-only: no edit tool at all
    assert "available tools: read_file, list_files, search_code, grep\n" in shown
