"""`kiln lsp --tcp HOST:PORT`: an IPv6 host written as URLs write it (`[::1]:2087`) is served,
and an address that cannot be listened on is one line naming it, exit code 1."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e]


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


def _read_message(conn: socket.socket) -> dict:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(
        next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[
            1
        ]
    )
    while len(body) < length:
        body += conn.recv(65536)
    return json.loads(body[:length])


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_a_bracketed_ipv6_host_is_served(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET6) as sock:
        sock.bind(("::1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "KILN_PROVIDER": "scripted"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "lsp", "--tcp", f"[::1]:{port}"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60  # the server may take a while to listen
        while True:
            assert proc.poll() is None, proc.communicate()[1].decode()
            try:
                conn = socket.create_connection(("::1", port), timeout=60)
                break
            except OSError:
                assert time.monotonic() < deadline, "the server never listened on [::1]"
                time.sleep(0.05)
        with conn:
            body = json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"capabilities": {}, "rootUri": tmp_path.as_uri()}}
            ).encode()  # fmt: skip
            conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            reply = _read_message(conn)
        assert reply["id"] == 1 and "capabilities" in reply["result"]
    finally:
        proc.kill()
        proc.communicate()


def test_a_port_in_use_is_one_line_naming_the_address() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_server", "lsp", "--tcp", f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0] and "in use" in lines[0]
