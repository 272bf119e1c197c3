"""The request's `Host` header against `kiln registry serve` on 127.0.0.1: whoever sends the
request picks it, so nothing the registry answers may send a client to the host it names."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.registry.conftest import cli_env, kiln, serving


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


def _json_get(port: int, target: str, host: str) -> tuple[dict[str, str], dict]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")[1:]
    headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines)}
    return headers, json.loads(body)


def _publish_one(tmp_path: Path, port: int) -> None:
    home = tmp_path / "home"
    made = kiln("registry", "token", "--data", str(tmp_path / "data"), "--namespace", "acme",
                env=cli_env(home), cwd=tmp_path)  # fmt: skip
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: notes\ndescription: Meeting notes.\n---\nx\n")
    env = cli_env(home, KILN_REGISTRY=f"http://127.0.0.1:{port}")
    published = kiln("skills", "publish", str(folder), "--token", made.stdout.strip(),
                     "--version", "1.0.0", env=env, cwd=tmp_path)  # fmt: skip
    assert published.returncode == 0, published.stderr


def test_the_marketplace_names_the_configured_url_whatever_the_host(tmp_path: Path) -> None:
    """Before: every plugin source of the served marketplace (and the well-known `api`) was
    built from the Host header, with nothing telling a cache in front that it varied: one
    request with a forged Host could make a shared cache send every user's Claude Code to
    clone from another host. Now `--base-url` names the public URL."""
    with serving(tmp_path / "data", tmp_path / "home", "--base-url",
                 "https://skills.example.org/") as port:  # fmt: skip
        _publish_one(tmp_path, port)
        headers, market = _json_get(port, "/.claude-plugin/marketplace.json", "evil.example")
        _, known = _json_get(port, "/.well-known/kiln-registry.json", "evil.example")
    (plugin,) = market["plugins"]
    assert plugin["source"]["url"] == "https://skills.example.org/git/acme/notes.git"
    assert "evil.example" not in json.dumps(market) and "vary" not in headers
    assert known["api"] == "https://skills.example.org/v1"


def test_without_a_base_url_the_host_built_answers_vary_by_host(tmp_path: Path) -> None:
    with serving(tmp_path / "data", tmp_path / "home") as port:
        _publish_one(tmp_path, port)
        for target in ("/.claude-plugin/marketplace.json", "/.well-known/kiln-registry.json"):
            headers, _ = _json_get(port, target, "evil.example")
            assert headers.get("vary") == "Host", (target, headers)


def test_a_base_url_that_is_no_url_is_refused(tmp_path: Path) -> None:
    proc = kiln("registry", "serve", "--port", "0", "--data", str(tmp_path / "d"),
                "--base-url", "skills.example.org", env=cli_env(tmp_path / "h"), cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2 and "--base-url must be an http(s) URL" in proc.stderr
