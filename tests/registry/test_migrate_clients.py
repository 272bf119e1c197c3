"""A registry moved with `kiln registry migrate` keeps serving the clients it had.

The target is served with the source's key, so a client's rollback floor (the last signed
metadata it accepted, kept per key) carries over. Before, the target numbered its change feed
from 1 as it copied, so a skill's `seq` there was lower than the one clients had seen from the
source, and every one of them refused the moved registry (`seq 6 is older than seq 8 already
seen`); and `latest` was recomputed instead of copied, so a `latest` the publisher had moved
back to 1.0.0 (2.0.0 being bad) pointed at 2.0.0 again.

Real `kiln registry migrate` and `kiln skills` processes, registries on 127.0.0.1, each target
backend pair.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from skills_registry.registry.app import create_app
from tests.registry.conftest import (
    BACKENDS,
    LiveRegistry,
    backend_urls,
    cli_env,
    kiln,
    make_skill,
    publish_skill,
    start_registry,
)


def _source(tmp_path: Path) -> LiveRegistry:
    live = start_registry(tmp_path / "src")
    notes = make_skill(tmp_path / "skills", "notes")
    publish_skill(live, notes, "1.0.0")
    publish_skill(live, notes, "2.0.0")
    for name in ("alpha", "beta", "gamma"):  # other skills' changes come first in the copy
        publish_skill(live, make_skill(tmp_path / "skills", name), "1.0.0")
    auth = {"Authorization": f"Bearer {live.token('acme')}"}
    base = f"{live.url}/v1/skills/acme/notes"
    for status in ("yanked", "active"):  # changes that leave nothing to copy
        httpx.put(f"{base}/versions/2.0.0/status", json={"status": status}, headers=auth)
    httpx.put(f"{base}/dist-tags/latest", json={"version": "1.0.0"}, headers=auth)
    return live


def _install(env: dict[str, str], project: Path, url: str) -> str:
    result = kiln(
        "skills", "install", "acme/notes", "--yes", "--registry", url, env=env, cwd=project
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("kind", BACKENDS)
def test_clients_of_a_migrated_registry_accept_it(
    kind: str, tmp_path: Path, project: Path, request: pytest.FixtureRequest
) -> None:
    source = _source(tmp_path)
    env = cli_env(tmp_path / "home")
    try:
        assert "acme/notes@1.0.0" in _install(env, project, source.url)
    finally:
        source.stop()
    src = tmp_path / "src"
    db, blobs = backend_urls(kind, tmp_path / "dst", request)
    db = db or f"sqlite://{tmp_path / 'dst' / 'registry.db'}"
    blobs = blobs or f"file://{tmp_path / 'dst' / 'blobs'}"
    server_env = cli_env(tmp_path / "server-home")  # with the bucket's AWS variables
    for _ in range(2):  # a second run (resuming, catching up) changes nothing
        moved = kiln(
            "registry", "migrate", "--from", f"sqlite://{src}/registry.db",
            "--from-blobs", f"file://{src}/blobs", "--to", db, "--to-blobs", blobs,
            "--signing-key", str(src / "keys" / "ed25519.key"), env=server_env, cwd=tmp_path,
        )  # fmt: skip
        assert moved.returncode == 0, moved.stderr

    app = create_app(tmp_path / "dst", db=db, blobs=blobs, signing_key=src / "keys/ed25519.key")
    target = start_registry(tmp_path / "dst", app)
    try:
        detail = httpx.get(f"{target.url}/v1/skills/acme/notes").json()
        assert detail["distTags"] == {"latest": "1.0.0"}  # before: 2.0.0
        key = httpx.get(f"{target.url}/.well-known/kiln-registry.json").json()["keys"][0]
        trusted = kiln(
            "skills", "trust", target.url, "--key", key["publicKey"], env=env, cwd=project
        )
        assert trusted.returncode == 0, trusted.stderr
        out = _install(env, project, target.url)  # before: "seq 6 is older than seq 8"
        assert "unchanged acme/notes@1.0.0" in out
    finally:
        target.stop()
        close = getattr(app.state.registry.store, "close", None)
        if close is not None:
            close()
    lock = json.loads((project / "skills-lock.json").read_text())
    assert lock["skills"]["acme/notes"]["version"] == "1.0.0"
