"""Without a sandbox backend: `kiln run --ci` refuses to run commands (and `--verify`) unless
`--no-sandbox` is given; editor hosts are told plainly that commands are unconfined."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lsp.conftest import prompt_once, running, server_env, status_texts
from tests.repos import PYTEST

pytestmark = pytest.mark.e2e


def kiln_run(repo: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    script = tmp / "script.json"
    script.write_text(
        json.dumps(
            [
                {"tool_calls": [{"name": "run_command", "input": {"command": "touch ran.txt"}}]},
                "done",
            ]
        )
    )
    env = {
        **os.environ,
        "KILN_PROVIDER": "scripted",
        "KILN_SCRIPT": str(script),
        "KILN_BWRAP": str(tmp / "no-bwrap"),
    }
    return subprocess.run([sys.executable, "-m", "lsp_server", "run", *args, "go"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_ci_refuses_commands_without_a_sandbox(failing_repo: Path, tmp_path: Path) -> None:
    proc = kiln_run(failing_repo, tmp_path, "--ci", "--output-format", "json")
    report = json.loads(proc.stdout)
    transcript = Path(report["transcript"]).read_text()
    assert "commands are refused: the sandbox is required" in transcript
    assert not (failing_repo / "ran.txt").exists()
    proc = kiln_run(failing_repo, tmp_path, "--ci", "--verify", PYTEST)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr  # a setup to fix
    assert proc.stderr.strip().count("\n") == 0 and "--no-sandbox" in proc.stderr
    proc = kiln_run(failing_repo, tmp_path, "--ci", "--no-sandbox", "--output-format", "json")
    assert proc.returncode in (0, 10), proc.stderr
    assert (failing_repo / "ran.txt").exists()


async def test_editor_status_says_commands_are_unconfined(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["hello"]))
    env = server_env(
        kiln_home,
        KILN_PROVIDER="scripted",
        KILN_SCRIPT=str(script),
        KILN_BWRAP=str(tmp_path / "none"),
    )
    async with running(root, env) as editor:
        await prompt_once(editor)
        texts = status_texts(editor.updates)
        assert any("commands are unconfined" in t for t in texts), editor.updates
