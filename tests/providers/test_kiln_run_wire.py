"""`kiln run` end to end through the real SDKs: a real process, a real wire server, a real repo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.testing.wire_server import WireServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FLOW = [
    {"tool_calls": [{"name": "search_code", "input": {"query": "add"}}]},
    {"tool_calls": [{"name": "read_file", "input": {"path": "calc.py"}}]},
    {
        "tool_calls": [
            {
                "name": "edit_file",
                "input": {
                    "path": "calc.py",
                    "old_text": "return a - b",
                    "new_text": "return a + b",
                },
            }
        ]
    },
    {
        "tool_calls": [
            {
                "name": "run_command",
                "input": {
                    "command": f"{sys.executable} -c \"import calc; print('sum', calc.add(1, 2))\""
                },
            }
        ]
    },
    {"match": "sum 3", "text": "Fixed add in calc.py."},
]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_kiln_run_fixes_a_bug_through_the_wire(tmp_path: Path, provider: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    with WireServer(FLOW) as srv:
        env = dict(os.environ)
        if provider == "anthropic":
            env.update(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=srv.anthropic_base_url)
        else:
            env.update(OPENAI_BASE_URL=srv.openai_base_url)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "lsp_server",
                "run",
                "Fix add",
                "--root",
                str(repo),
                "--mode",
                "yolo",
                "--output-format",
                "json",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert proc.returncode == 0, proc.stderr
    assert "return a + b" in (repo / "calc.py").read_text()
    assert "Fixed add in calc.py." in proc.stdout
    bodies = [r.body for r in srv.requests]
    assert len(bodies) == 5
    # the frozen prefix is byte-identical on every call
    prefix = {
        json.dumps([b.get("tools"), b["system"] if provider == "anthropic" else b["messages"][0]])
        for b in bodies
    }
    assert len(prefix) == 1
