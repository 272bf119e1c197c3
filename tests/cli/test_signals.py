"""Ctrl-C and SIGTERM through the real `kiln` process: one line, exit 130 (cancelled), no
traceback, nothing half-written, and the next run works. SIGTERM unwinds like Ctrl-C, so the
cleanup an interrupted command does (an install's temporary folder, a rolled-back index
transaction) happens for it too."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.child_signals import as_from_a_terminal
from tests.registry.conftest import LiveRegistry, cli_env, kiln, make_skill, publish_skill


class StalledRegistry:
    """A loopback server that reads a request and never answers: the install is mid-flight
    for as long as the test wants."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.asked = threading.Event()
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            conn.recv(65536)
            self.asked.set()

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def stalled() -> Iterator[StalledRegistry]:
    server = StalledRegistry()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize(
    ("sig", "line"), [(signal.SIGTERM, "kiln: terminated"), (signal.SIGINT, "kiln: aborted")]
)
def test_a_signal_during_skills_install_is_cancelled_cleanly(
    tmp_path: Path, registry: LiveRegistry, stalled: StalledRegistry, sig: int, line: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = cli_env(tmp_path / "home")
    args = ["skills", "install", "acme/helper", "-y", "--root", str(project)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", *args, "--registry", stalled.url],
        env=env, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=as_from_a_terminal,
    )  # fmt: skip
    try:
        assert stalled.asked.wait(60), "the install never reached the registry"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, (proc.returncode, err)
    assert [x for x in err.splitlines() if x.strip()] == [line]
    assert not (project / ".kiln" / "skills").exists()
    assert not (project / "skills-lock.json").exists()
    publish_skill(registry, make_skill(tmp_path / "src", "helper"), "1.0.0")
    again = kiln(*args, "--registry", registry.url, env=env, cwd=project)
    assert again.returncode == 0, again.stderr
    assert (project / ".kiln" / "skills" / "helper" / "SKILL.md").is_file()
    assert sorted(p.name for p in (project / ".kiln" / "skills").iterdir()) == ["helper"]
