"""The request's `Host` header against `kiln registry serve` on 127.0.0.1: whoever sends the
request picks it, so nothing the registry answers may send a client to the host it names."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.registry.conftest import serving


def _raw_get(port: int, target: str, host: str) -> tuple[int, dict[str, str]]:
    """One GET with a forged Host header; the status and the headers (lowercase names)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data and (chunk := sock.recv(65536)):
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in head[1:])
    return int(head[0].split()[1]), {k.lower(): v for k, v in headers.items()}


@pytest.mark.parametrize(
    ("target", "location"),
    [
        ("/v1/skills/", "/v1/skills"),
        ("/v1/skills/?q=pdf&limit=3", "/v1/skills?q=pdf&limit=3"),
        ("/v1/skills/acme/deploy/versions/", "/v1/skills/acme/deploy/versions"),
    ],
)
def test_a_trailing_slash_redirects_on_this_host(
    tmp_path: Path, target: str, location: str
) -> None:
    """Before: `Location: http://evil.example/v1/skills`, built from the forged Host header."""
    with serving(tmp_path / "data", tmp_path / "home") as port:
        status, headers = _raw_get(port, target, "evil.example")
    assert status == 307
    assert headers["location"] == location


def test_a_path_no_route_serves_is_a_404_not_a_redirect(tmp_path: Path) -> None:
    with serving(tmp_path / "data", tmp_path / "home") as port:
        for target in ("//evil.example/", "/nothing/here/"):
            status, headers = _raw_get(port, target, "evil.example")
            assert status == 404 and "location" not in headers, (target, headers)
