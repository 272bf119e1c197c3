"""The signing key a registry serves, and the one this machine pinned, as hostile input.

A proxy on 127.0.0.1 in front of a real registry rewrites ``/.well-known/kiln-registry.json``.
A key's id is computed from the key's bytes, never taken from the answer: before, `kiln skills
trust URL` printed whatever ``keyId`` was served beside the key, so a registry could show the
operator's published id next to its own key; a key without ``keyId`` was "internal error:
KeyError" on every install, and a key that is not ed25519 a usage error (exit 2) telling the
user to copy another key. A pin in ``trusted_keys.json`` of another shape (an edited file) was
"internal error: KeyError", or read as no pin, which the next install replaced on "first use".
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from nacl.signing import SigningKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from skills_registry.registry.signing import key_id
from tests.registry.conftest import (
    LiveRegistry,
    cli_env,
    kiln,
    make_skill,
    publish_skill,
    start_registry,
    tree_snapshot,
)


class Proxy:
    """Forwards to ``upstream``; ``keys``, when set, replaces the served ``keys``."""

    def __init__(self, upstream: str) -> None:
        self.upstream, self.keys = upstream, None
        self.app = Starlette(routes=[Route("/{path:path}", self.answer)])

    async def answer(self, request: Request) -> Response:
        path = request.url.path
        async with httpx.AsyncClient() as http:
            upstream = await http.get(self.upstream + path, params=request.query_params)
        if path.endswith("kiln-registry.json") and self.keys is not None:
            return JSONResponse({**upstream.json(), "keys": self.keys})
        media = upstream.headers.get("content-type")
        return Response(upstream.content, upstream.status_code, media_type=media)


@pytest.fixture
def proxy(registry: LiveRegistry, tmp_path: Path) -> Iterator[tuple[Proxy, dict[str, Any]]]:
    publish_skill(registry, make_skill(tmp_path / "src", "helper"), "1.0.0")
    real = httpx.get(f"{registry.url}/.well-known/kiln-registry.json").json()["keys"][0]
    server = Proxy(registry.url)
    live = start_registry(tmp_path / "unused", app=server.app)
    try:
        yield server, {**real, "url": live.url}
    finally:
        live.stop()


def _kiln(tmp_path: Path, *args: str) -> tuple[int, str, str, Path]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    done = kiln(*args, env=cli_env(tmp_path / "home"), cwd=project)
    return done.returncode, done.stdout, done.stderr, project


def _other_key() -> str:
    return base64.b64encode(bytes(SigningKey.generate().verify_key)).decode()


def test_trust_shows_the_id_of_the_served_key_not_the_id_it_claims(
    proxy: tuple[Proxy, dict[str, Any]], tmp_path: Path
) -> None:
    server, real = proxy
    forged = _other_key()
    server.keys = [{"keyId": real["keyId"], "algorithm": "ed25519", "publicKey": forged}]
    code, out, err, _ = _kiln(tmp_path, "skills", "trust", real["url"])
    assert code == 0, err
    assert out == f"{real['url']} serves {key_id(base64.b64decode(forged))}: {forged}\n"
    assert real["keyId"] not in out + err


def test_a_served_key_without_an_id_installs_under_the_id_of_its_bytes(
    proxy: tuple[Proxy, dict[str, Any]], tmp_path: Path
) -> None:
    server, real = proxy
    server.keys = [{"publicKey": real["publicKey"]}]
    code, _, err, project = _kiln(
        tmp_path, "skills", "install", "acme/helper", "--registry", real["url"], "--yes"
    )
    assert code == 0, err
    assert (project / ".kiln/skills/helper/SKILL.md").is_file()
    pins = json.loads((tmp_path / "home/trusted_keys.json").read_text())
    assert pins == {real["url"]: {"keyId": real["keyId"], "publicKey": real["publicKey"]}}


@pytest.mark.parametrize(
    "keys",
    [
        [{"keyId": "ed25519:0", "publicKey": 5}],
        [{"keyId": "ed25519:0", "publicKey": "not base64!"}],
        [{"keyId": "ed25519:0", "publicKey": base64.b64encode(b"short").decode()}],
        ["a key"],
    ],
)
@pytest.mark.parametrize("command", ["install", "info", "trust"])
def test_a_served_key_that_is_not_ed25519_is_refused_in_one_line(
    proxy: tuple[Proxy, dict[str, Any]], tmp_path: Path, keys: list[Any], command: str
) -> None:
    server, real = proxy
    server.keys = keys
    args = {
        "install": ["install", "acme/helper", "--registry", real["url"], "--yes"],
        "info": ["info", "acme/helper", "--registry", real["url"]],
        "trust": ["trust", real["url"]],
    }[command]
    code, out, err, project = _kiln(tmp_path, "skills", *args)
    assert code == 5, (code, out, err)
    assert err == (
        f"kiln: registry {real['url']} serves a signing key that is not a base64 ed25519 "
        "public key (report it to the registry operator)\n"
    )
    assert tree_snapshot(project) == {} and not (tmp_path / "home/trusted_keys.json").exists()


def test_trust_of_a_registry_that_serves_no_key_says_so(
    proxy: tuple[Proxy, dict[str, Any]], tmp_path: Path
) -> None:
    server, real = proxy
    server.keys = []
    code, out, err, _ = _kiln(tmp_path, "skills", "trust", real["url"])
    assert code == 5 and out == "", (code, out, err)
    assert f"registry {real['url']} publishes no signing key" in err and err.count("\n") == 1


@pytest.mark.parametrize("pin", [5, "a key", {"keyId": 1}, {"publicKey": "short"}])
@pytest.mark.parametrize("command", ["install", "info"])
def test_a_pin_of_another_shape_is_refused_and_kept(
    proxy: tuple[Proxy, dict[str, Any]], tmp_path: Path, pin: object, command: str
) -> None:
    _, real = proxy
    pins = tmp_path / "home/trusted_keys.json"
    pins.parent.mkdir(parents=True)
    pins.write_text(json.dumps({real["url"]: pin}))
    args = ["acme/helper", "--registry", real["url"]] + (["--yes"] if command == "install" else [])
    code, out, err, project = _kiln(tmp_path, "skills", command, *args)
    assert code == 2, (code, out, err)
    assert f"the pin for {real['url']} is not a key pinned by `kiln skills trust`" in err
    assert err.count("\n") == 1 and "internal error" not in err
    assert json.loads(pins.read_text()) == {real["url"]: pin}  # not replaced on "first use"
    assert tree_snapshot(project) == {}


def test_trust_says_whether_the_pin_is_the_served_key(
    proxy: tuple[Proxy, dict[str, Any]], tmp_path: Path
) -> None:
    """`kiln skills trust URL` ended with "pin it with: …" on a machine that had pinned the key
    already, and said nothing when the pin was another key (every install then refused)."""
    _, real = proxy
    code, out, err, _ = _kiln(tmp_path, "skills", "trust", real["url"])
    assert code == 0 and "pin it with: kiln skills trust" in err
    assert _kiln(tmp_path, "skills", "trust", real["url"], "--key", real["publicKey"])[0] == 0
    code, out, err, _ = _kiln(tmp_path, "skills", "trust", real["url"])
    assert code == 0 and out.endswith(f"pinned: {real['keyId']} (the key it serves)\n"), out
    assert "pin it with" not in err
    other = _other_key()
    _kiln(tmp_path, "skills", "trust", real["url"], "--key", other)
    code, out, err, _ = _kiln(tmp_path, "skills", "trust", real["url"])
    assert code == 0 and "pinned:" not in out
    assert err.startswith(f"kiln: warning: pinned {key_id(base64.b64decode(other))}, not a key")
