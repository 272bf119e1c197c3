"""Slow clients against `kiln registry serve` as a real process on 127.0.0.1 (slowloris).

Before, a connection that sent a request head a byte at a time, or trickled a body, or sent
one byte after a keep-alive response (which switches uvicorn's idle timer off), was held open
for as long as the client liked: each one a socket and a file descriptor of the server, at no
cost to the client. With `--read-timeout` the request must arrive in time: a 408 and the
connection closed. The pacing below is the attack itself; every assertion waits on the
server's answer or close, with a socket timeout that only fires if the server never acts.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.registry.conftest import cli_env, kiln, make_skill, serving

NEVER = 60.0  # seconds: fires only if the server keeps the connection for good


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, int, Path]]:
    data = tmp_path / "registry-data"
    with serving(data, tmp_path / "server-home", "--read-timeout", "1") as port:
        yield f"http://127.0.0.1:{port}", port, data


def _until_closed(sock: socket.socket, trickle: bytes = b"") -> bytes:
    """Send ``trickle`` a byte at a time (the attack) and return what the server sent back
    once it closed the connection."""
    sock.settimeout(NEVER)
    received = b""
    for byte in trickle:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            break  # closed while we were still sending
        sock.settimeout(0.2)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            break
        if not chunk:
            return received
        received += chunk
    sock.settimeout(NEVER)
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_a_request_head_sent_a_byte_at_a_time_is_cut_off(served: tuple[str, int, Path]) -> None:
    _, port, _ = served
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /v1/skills HTTP/1.1\r\nHost: x\r\n")
        answer = _until_closed(sock, b"X-Slow: " + b"a" * 10_000)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b'"request_timeout"' in answer


def test_a_silent_connection_is_cut_off(served: tuple[str, int, Path]) -> None:
    _, port, _ = served
    with socket.create_connection(("127.0.0.1", port)) as sock:
        answer = _until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]


def test_a_trickled_body_is_cut_off(served: tuple[str, int, Path]) -> None:
    _, port, _ = served  # the OIDC exchange needs no token: anyone can send it a body
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            b"POST /v1/oidc/token HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
            b"content-length: 60000\r\n\r\n"
        )
        answer = _until_closed(sock, b'{"token": "' + b"a" * 59_000)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]


def test_a_byte_after_a_keep_alive_response_does_not_hold_the_connection(
    served: tuple[str, int, Path],
) -> None:
    _, port, _ = served
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(NEVER)
        first = b""
        while not first.endswith(b'{"status":"ok"}'):
            chunk = sock.recv(65536)
            assert chunk, first
            first += chunk
        assert first.startswith(b"HTTP/1.1 200 "), first
        answer = _until_closed(sock, b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 10_000)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]


def test_prompt_clients_are_served_as_before(served: tuple[str, int, Path], tmp_path: Path) -> None:
    url, _, data = served
    home = tmp_path / "home"
    env = cli_env(home)
    token = kiln(
        "registry", "token", "--data", str(data), "--namespace", "acme", env=env, cwd=tmp_path
    ).stdout.strip()
    folder = make_skill(tmp_path / "src", "notes", body="# Notes\n" + "x" * 200_000)
    published = kiln(
        "skills", "publish", str(folder), "--version", "1.0.0", "--registry", url,
        "--token", token, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert published.returncode == 0, published.stderr
    with httpx.Client(base_url=url) as client:  # one keep-alive connection, requests in a row
        for _ in range(3):
            assert client.get("/v1/skills", params={"q": "notes"}).json()["skills"]
        start = time.monotonic()
        while time.monotonic() - start < 1.5:  # busy for longer than the read timeout
            assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize("value", ["nan", "NaN", "inf"])
def test_a_read_timeout_that_is_no_number_is_refused(value: str, tmp_path: Path) -> None:
    """Before, `--read-timeout nan` passed the range check (every comparison with nan is false)
    and the server ran with no read timeout at all: slow clients held connections for ever."""
    result = kiln(
        "registry", "serve", "--port", "0", "--data", str(tmp_path / "data"),
        "--read-timeout", value, env=cli_env(tmp_path / "home"), cwd=tmp_path, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "--read-timeout" in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "data").exists()
