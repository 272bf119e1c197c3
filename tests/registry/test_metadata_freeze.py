"""A mirror that freezes a client by failing only the signed metadata (a real proxy on 127.0.0.1).

The metadata expires (`--metadata-ttl`) so that a frozen mirror is noticed; serving an expired
copy is refused (`test_trust.py`). Before, a mirror that answered `503` for
`/v1/skills/{id}/metadata` and passed everything else through made the client fall back to its
own cached copy, with no expiry check, for ever: a version yanked as malicious since stayed the
one `kiln skills install` picked. The cached copy now stands in only when the registry cannot
be reached at all (offline).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.registry.conftest import (
    LiveRegistry,
    cli_env,
    fails,
    kiln,
    make_skill,
    start_registry,
)


class FreezingMirror:
    """Passes every GET through; with ``freeze`` set, answers 503 for signed metadata only."""

    def __init__(self, upstream: str) -> None:
        self.upstream, self.freeze = upstream, False
        self.app = Starlette(routes=[Route("/{path:path}", self.forward, methods=["GET"])])

    async def forward(self, request: Request) -> Response:
        if self.freeze and request.url.path.endswith("/metadata"):
            return Response(b'{"error": {"code": "unavailable"}}', 503)
        async with httpx.AsyncClient() as http:
            upstream = await http.get(self.upstream + request.url.path, params=request.query_params)
        return Response(
            upstream.content,
            upstream.status_code,
            media_type=upstream.headers.get("content-type"),
        )


@pytest.fixture
def frozen(registry: LiveRegistry) -> Iterator[tuple[FreezingMirror, LiveRegistry]]:
    mirror = FreezingMirror(registry.url)
    live = start_registry(registry.data / "unused", app=mirror.app)
    try:
        yield mirror, live
    finally:
        live.stop()


def _install(env: dict[str, str], cwd: Path, url: str, spec: str = "acme/notes"):
    return kiln("skills", "install", spec, "--yes", "--registry", url, env=env, cwd=cwd)


def test_failing_only_the_metadata_does_not_freeze_the_client(
    registry: LiveRegistry, frozen: tuple[FreezingMirror, LiveRegistry], tmp_path: Path
) -> None:
    mirror, proxy = frozen
    token = {"Authorization": f"Bearer {registry.token('acme')}"}
    env = cli_env(tmp_path / "home")
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    folder = make_skill(tmp_path / "src", "notes", description="Writes notes.")
    published = kiln(
        "skills", "publish", str(folder), "--version", "1.0.0", "--registry", registry.url,
        "--token", token["Authorization"][7:], env=env, cwd=tmp_path,
    )  # fmt: skip
    assert published.returncode == 0, published.stderr
    assert _install(env, first, proxy.url).returncode == 0  # pins the key, caches the metadata

    # 1.0.0 turns out to be malicious: yanked, and a fixed 1.0.1 published.
    status = httpx.put(
        f"{registry.url}/v1/skills/acme/notes/versions/1.0.0/status",
        json={"status": "yanked", "reason": "steals credentials"},
        headers=token,
    )
    assert status.status_code == 200, status.text
    fixed = kiln(
        "skills", "publish", str(folder), "--version", "1.0.1", "--registry", registry.url,
        "--token", token["Authorization"][7:], env=env, cwd=tmp_path,
    )  # fmt: skip
    assert fixed.returncode == 0, fixed.stderr

    mirror.freeze = True  # the mirror answers everything but the metadata that would tell
    result = _install(env, second, proxy.url)
    assert result.returncode != 0, result.stdout  # before: installed acme/notes@1.0.0
    assert "503" in result.stderr or "failed" in result.stderr, result.stderr
    assert result.stderr.count("\n") <= 2 and "Traceback" not in result.stderr
    assert not (second / ".kiln" / "skills" / "notes").exists()
    assert not (second / "skills-lock.json").exists()

    mirror.freeze = False  # the same client, answered honestly, gets the fixed version
    honest = _install(env, second, proxy.url)
    assert honest.returncode == 0, honest.stderr
    lock = json.loads((second / "skills-lock.json").read_text())
    assert lock["skills"]["acme/notes"]["version"] == "1.0.1"


def test_an_unreachable_registry_still_installs_from_the_cache(
    registry: LiveRegistry, frozen: tuple[FreezingMirror, LiveRegistry], tmp_path: Path
) -> None:
    """Offline (nothing answers at all), the last accepted metadata stands in, as documented."""
    _, proxy = frozen
    env = cli_env(tmp_path / "home")
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    folder = make_skill(tmp_path / "src", "notes", description="Writes notes.")
    token = registry.token("acme")
    assert (
        kiln(
            "skills",
            "publish",
            str(folder),
            "--version",
            "1.0.0",
            "--registry",
            registry.url,
            "--token",
            token,
            env=env,
            cwd=tmp_path,
        ).returncode  # fmt: skip
        == 0
    )
    assert _install(env, first, proxy.url).returncode == 0
    proxy.stop()  # nothing listens there any more
    offline = _install(env, second, proxy.url, "acme/notes@1.0.0")
    assert offline.returncode == 0, offline.stderr
    assert (second / ".kiln" / "skills" / "notes" / "SKILL.md").exists()
    # said, by install and by info: the copy kept here cannot know a yank since
    # (before, both answered as if the registry had)
    assert "cannot reach registry" in offline.stderr and "copy kept here" in offline.stderr
    info = kiln("skills", "info", "acme/notes@1.0.0", "--registry", proxy.url, env=env, cwd=second)
    assert info.returncode == 0 and "notes" in info.stdout, info.stderr
    assert "copy kept here (seq " in info.stderr and "cannot reach registry" in info.stderr
    # docs/registry.md: a version this machine never fetched "needs the registry (`cannot reach
    # registry …`)"; before, the cached copy answered "no version of acme/notes matches '2.0.0'"
    # as if the registry had said so.
    never = _install(env, second, proxy.url, "acme/notes@2.0.0")
    fails(never, 1, "cannot reach registry")
    assert "kept here has no '2.0.0'" in never.stderr and "no version of" not in never.stderr
    # and `outdated` asks the registry: the cached copy called the skill "up to date"
    outdated = kiln("skills", "outdated", env=env, cwd=first)
    fails(outdated, 1, "cannot reach registry")
    assert "up to date" not in outdated.stdout
    # `update` asks the registry too: it said "unchanged" from the cached copy
    lock_before = (first / "skills-lock.json").read_text()
    updated = kiln("skills", "update", "--yes", env=env, cwd=first)
    fails(updated, 1, "cannot reach registry")
    assert "unchanged" not in updated.stdout
    assert (first / "skills-lock.json").read_text() == lock_before
