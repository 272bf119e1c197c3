"""A hostile publisher against the registry server over real HTTP: JSON bodies and tool schemas
nested deep enough to blow the parser's stack (before: a plain-text 500), and names that read
like an existing skill (``evil/dep1oy`` beside ``acme/deploy``), on every backend pair."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from skills_registry.archive import ArchiveContents, build_archive, read_dir
from skills_registry.deferred import load_sidecar_tools
from tests.registry.conftest import LiveRegistry, blob_names, make_skill

DEEP = b"[" * 60_000  # under the 64 KB body limit, far past the parser's stack


def _put(reg: LiveRegistry, token: str, skill_id: str, version: str, body: bytes) -> httpx.Response:
    return httpx.put(
        f"{reg.url}/v1/skills/{skill_id}/versions/{version}",
        content=body,
        headers={"Authorization": f"Bearer {token}"},
    )


@pytest.fixture
def published(registry: LiveRegistry, tmp_path: Path) -> tuple[LiveRegistry, str]:
    token = registry.token("acme")
    folder = make_skill(tmp_path / "src", "deploy", description="Deploys.")
    assert _put(registry, token, "acme/deploy", "1.0.0", build_archive(read_dir(folder))).is_success
    return registry, token


@pytest.mark.parametrize(
    ("method", "path", "auth"),
    [
        ("PUT", "/v1/skills/acme/deploy/dist-tags/beta", True),
        ("PUT", "/v1/skills/acme/deploy/versions/1.0.0/status", True),
        ("PUT", "/v1/skills/acme/deploy/deprecation", True),
        ("POST", "/v1/oidc/token", False),  # no token needed to reach this parser
    ],
)
def test_deeply_nested_json_body_is_a_json_400(
    published: tuple[LiveRegistry, str], method: str, path: str, auth: bool
) -> None:
    registry, token = published
    headers = {"Authorization": f"Bearer {token}"} if auth else {}
    response = httpx.request(method, registry.url + path, content=DEEP, headers=headers)
    assert response.status_code == 400, response.text
    assert "nested deeper than 64 levels" in response.json()["error"]["message"]


def test_deeply_nested_tool_schema_is_refused_at_publish_and_skipped_locally(
    published: tuple[LiveRegistry, str], tmp_path: Path
) -> None:
    registry, token = published
    files = dict(read_dir(make_skill(tmp_path / "src2", "deploy", description="Deploys.")).files)
    files["tools/deep.json"] = b'{"name": "x", "description": "x", "command": "x", "a": ' + DEEP
    before = blob_names(registry)
    response = _put(
        registry, token, "acme/deploy", "1.0.1", build_archive(ArchiveContents("deploy", files))
    )
    assert response.status_code == 422, response.text
    assert any("tools/deep.json" in e and "nested deeper" in e for e in response.json()["errors"])
    assert blob_names(registry) == before

    # A skill folder from elsewhere (a repository, a registry that signed it) is skipped with a
    # warning; before, the RecursionError ended the session's tool loading.
    skill = make_skill(tmp_path / "local", "deploy", extra={"run.sh": "#!/bin/sh\n"})
    (skill / "tools").mkdir()
    schema = '{"type": "object", "properties": {"a": ' * 900 + "{}" + "}}" * 900
    text = '{"name": "x", "description": "x", "command": "run.sh", "input_schema": ' + schema + "}"
    (skill / "tools" / "deep.json").write_text(text)
    (skill / "tools" / "deeper.json").write_bytes(DEEP)
    warnings: list[str] = []
    assert load_sidecar_tools(skill, warnings=warnings) == []
    assert len(warnings) == 2 and all("nested deeper than 64 levels" in w for w in warnings)


@pytest.fixture
def any_registry(backend_registry: LiveRegistry) -> LiveRegistry:
    return backend_registry


def test_a_name_that_reads_like_an_existing_skill_is_refused(
    any_registry: LiveRegistry, tmp_path: Path
) -> None:
    registry = any_registry
    acme, evil = registry.token("acme"), registry.token("evil")
    assert _put(registry, acme, "acme/deploy", "1.0.0", _archive(tmp_path, "deploy")).is_success
    # The same name in another namespace is namespacing, not a look-alike.
    assert _put(registry, evil, "evil/deploy", "1.0.0", _archive(tmp_path, "deploy")).is_success
    for name in ("mail", "word", "lint"):
        assert _put(registry, acme, f"acme/{name}", "1.0.0", _archive(tmp_path, name)).is_success
    before = blob_names(registry)
    for token, skill_id, like in [
        (evil, "evil/dep1oy", "acme/deploy"),  # a look-alike name, from any namespace
        (acme, "acme/dep1oy", "acme/deploy"),
        (evil, "evil/dep-loy", "acme/deploy"),  # a separator more
        (evil, "evil/c1eploy", "acme/deploy"),  # cl for d, 1 for l
        (evil, "evil/rnail", "acme/mail"),  # rn for m
        (evil, "evil/vvord", "acme/word"),  # vv for w
        (evil, "evil/iint", "acme/lint"),  # i for l
        (registry.token("evi1"), "evi1/deploy", "evil/deploy"),  # a look-alike namespace
        (registry.token("acrne"), "acrne/deploy", "acme/deploy"),  # rn for m in the namespace
        (registry.token("ac0me"), "ac0me/notes", None),  # reads as acome/notes: nothing like it
        (acme, "acme/deploy-tool", None),  # a longer name of its own
        (acme, "acme/modal", None),
    ]:
        name = skill_id.partition("/")[2]
        response = _put(registry, token, skill_id, "1.0.0", _archive(tmp_path, name))
        if like is None:
            assert response.status_code == 201, response.text
            before = blob_names(registry)
            continue
        assert response.status_code == 422, response.text
        (error,) = response.json()["errors"]
        assert f"{skill_id} reads like the existing skill {like}" in error, error
        assert blob_names(registry) == before
        assert httpx.get(f"{registry.url}/v1/skills/{skill_id}").status_code == 404
    # New versions of a skill published before its look-alike existed are not refused.
    assert _put(registry, acme, "acme/deploy", "1.0.1", _archive(tmp_path, "deploy")).is_success


def _archive(tmp_path: Path, name: str) -> bytes:
    return build_archive(read_dir(make_skill(tmp_path / "src", name, description="A skill.")))


def test_dots_and_slashes_in_urls_reach_no_file(
    published: tuple[LiveRegistry, str], tmp_path: Path
) -> None:
    registry, token = published
    archive = _archive(tmp_path, "deploy")
    data = sorted(p.relative_to(registry.data) for p in registry.data.rglob("*"))
    for path in ("acme/..%2F..%2Fx/versions/1.0.0", "acme/deploy/versions/..%2F..%2Fetc"):
        response = httpx.put(
            f"{registry.url}/v1/skills/{path}",
            content=archive,
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code in (404, 422), response.text
    for path in (
        "/v1/skills/acme/deploy/versions/1.0.0/files/..%2F..%2Fregistry.db",
        "/v1/skills/acme/deploy/versions/1.0.0/files/../../../registry.db",
        "/v1/skills/..%2F..%2F/deploy/metadata",
        "/git/acme/deploy.git/objects/..%2F..%2Fregistry.db",
    ):
        response = httpx.get(registry.url + path)
        assert response.status_code == 404 and b"SQLite" not in response.content, path
    assert sorted(p.relative_to(registry.data) for p in registry.data.rglob("*")) == data


def test_git_upload_pack_refuses_a_gzip_bomb_and_a_bare_want(
    published: tuple[LiveRegistry, str],
) -> None:
    """Unauthenticated, like `git clone`: 60 KB of gzip used to be inflated whole (60 MB in the
    server) before the cut, and a ``want`` with no id was a plain-text 500."""
    import gzip

    registry, _ = published
    url = f"{registry.url}/git/acme/deploy.git/git-upload-pack"
    bomb = gzip.compress(b"\0" * (60 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 64 * 1024
    response = httpx.post(url, content=bomb, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 413, response.text
    assert "expands past 262144 bytes" in response.json()["error"]["message"]
    bare = httpx.post(url, content=b"0009want \n0000")
    assert bare.status_code == 400 and bare.json()["error"]["code"] == "bad_request", bare.text


@pytest.mark.parametrize("body", [b"0004-004", b"0004+004", b"0004 004", b"00ffwant", b"garbage"])
def test_git_upload_pack_refuses_a_malformed_pkt_line_at_once(
    published: tuple[LiveRegistry, str], body: bytes
) -> None:
    """A pkt-line length was read with ``int(..., 16)``, which takes a sign: `0004-004` stepped
    back to the start and looped forever on a server thread, for anyone (no token needed); a few
    such requests took every worker. Each is now a 400 naming the bad length."""
    registry, _ = published
    url = f"{registry.url}/git/acme/deploy.git/git-upload-pack"
    answer = httpx.post(url, content=body, timeout=20)
    assert answer.status_code == 400, answer.text
    assert "pkt-line" in answer.json()["error"]["message"]
    assert "int()" not in answer.text  # nothing of Python's own message


def test_a_reason_or_message_past_500_characters_is_refused_not_cut(
    published: tuple[LiveRegistry, str],
) -> None:
    """Before: a yank reason or deprecation message over 500 characters was stored cut at 500,
    and the answer said nothing of it. Now it is a 422 and nothing changes; 500 is kept whole."""
    registry, token = published
    headers = {"Authorization": f"Bearer {token}"}
    base = f"{registry.url}/v1/skills/acme/deploy"
    for path, body in [
        ("/versions/1.0.0/status", {"status": "yanked", "reason": "r" * 501}),
        ("/deprecation", {"message": "m" * 501}),
    ]:
        response = httpx.put(base + path, json=body, headers=headers)
        assert response.status_code == 422, response.text[:200]
        assert "the limit is 500" in response.json()["error"]["message"]
    metadata = httpx.get(base + "/metadata").json()["signed"]
    assert metadata["versions"]["1.0.0"]["status"] == "active" and not metadata["deprecated"]
    assert httpx.put(
        base + "/versions/1.0.0/status",
        json={"status": "yanked", "reason": "r" * 500},
        headers=headers,
    ).is_success
    assert httpx.put(base + "/deprecation", json={"message": "m" * 500}, headers=headers).is_success
    metadata = httpx.get(base + "/metadata").json()["signed"]
    assert metadata["versions"]["1.0.0"]["statusReason"] == "r" * 500
    assert metadata["deprecated"] == "m" * 500
