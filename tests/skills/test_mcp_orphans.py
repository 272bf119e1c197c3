"""A stdio MCP server that ignores SIGTERM and the end of its input is not left running when
`kiln run` dies, SIGKILL included (docs/security.md section 6a, "End" in docs/acp.md). Without
the sandbox's `--die-with-parent`, it outlived Kiln as an orphan of init; the kernel now ends it
(Linux `PR_SET_PDEATHSIG`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.skills.test_mcp_hostile import SEARCH, placed, server
from tests.waiting import wait_until


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/status").read_text().find("State:\tZ") < 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_deaf_server_dies_with_a_killed_kiln_run(tmp_path: Path, kiln_home: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    pid_file = root / "deaf.pid"
    release = tmp_path / "never"
    (kiln_home / "mcp.json").write_text(
        json.dumps({"mcpServers": placed(root, {"deaf": server("deaf", str(pid_file))})})
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps([SEARCH, {"wait_for": str(release)}, "done"]))
    env = {**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home),
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip
    kiln = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "run", "--mode", "yolo", "--no-sandbox", "go"],
        cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    pid = 0
    try:
        assert wait_until(lambda: pid_file.exists() and pid_file.read_text().strip()), "no server"
        pid = int(pid_file.read_text())
        kiln.send_signal(signal.SIGKILL)
        kiln.wait(timeout=60)
        assert wait_until(lambda: not alive(pid)), f"the server {pid} outlived kiln run"
    finally:
        if kiln.poll() is None:
            kiln.kill()
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)
