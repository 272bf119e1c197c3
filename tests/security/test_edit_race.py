"""An edit is checked (and shown to the user) when it is proposed and written when the user says
yes: a command running meanwhile could swap a folder on the way for a link, and the approved
write followed it out of the workspace (docs/security.md section 2). Through the real `kiln run`
on a terminal, in `ask` mode with the user's rule allowing `make *`: the model writes `d/notes.txt`
and, in the same reply, runs the repository's `make`, which replaces `d` with a link to a folder
outside once the question is on screen; the user then says yes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.sandbox import find_backend

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


class Terminal:
    """A process on a pseudo-terminal the test reads and types into, like a user."""

    def __init__(self, args: list[str], *, env: dict[str, str], cwd: Path) -> None:
        self.leader, follower = pty.openpty()
        self.proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=follower, stdout=follower,
                                     stderr=follower)  # fmt: skip
        os.close(follower)
        self.seen = b""

    def read_until(self, text: bytes) -> None:
        while text not in self.seen:
            chunk = self._read()
            assert chunk, self.seen.decode(errors="replace")

    def read_to_end(self) -> str:
        while self._read():
            pass
        self.proc.wait(timeout=60)
        os.close(self.leader)
        return self.seen.decode(errors="replace")

    def _read(self) -> bytes:
        try:
            chunk = os.read(self.leader, 65536)
        except OSError:  # EIO: the process closed the terminal
            return b""
        self.seen += chunk
        return chunk


def wait_for(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 60  # fires only when something is wrong
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_folder_swapped_for_a_link_after_the_yes_gets_no_write(
    tmp_path: Path, kiln_home: Path, host_dir: Path
) -> None:
    victim = host_dir / "victim"  # a folder of the user's, outside the workspace
    victim.mkdir()
    root = tmp_path / "repo"
    (root / "d").mkdir(parents=True)
    (root / "Makefile").write_text(
        "test:\n\tfor i in $$(seq 1200); do [ -e go ] && break; sleep 0.05; done; "
        f"rm -rf d && ln -s {victim} d\n"
    )
    (kiln_home / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(make *)"]}})
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"tool_calls": [
            {"name": "write_file", "input": {"path": "d/notes.txt", "content": "pwned\n"}},
            {"name": "run_command", "input": {"command": "make test"}},
        ]},
        "done",
    ]))  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path), "KILN_HOME": str(kiln_home), "TERM": "dumb",
           "KILN_PROVIDER": "scripted", "KILN_SCRIPT": str(script)}  # fmt: skip
    term = Terminal([sys.executable, "-m", "lsp_server", "run", "--mode", "ask", "go"],
                    env=env, cwd=root)  # fmt: skip
    term.read_until(b"Allow write_file")  # the question is on screen: the path was checked
    (root / "go").touch()
    wait_for(lambda: (root / "d").is_symlink(), "the make target to swap d for a link")
    os.write(term.leader, b"y\n")
    shown = term.read_to_end()
    assert not (victim / "notes.txt").exists(), shown
    assert list(victim.iterdir()) == [], shown
    assert "a folder became a link" in shown, shown
