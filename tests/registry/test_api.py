"""The registry API over real HTTP on loopback: publish rules, reads, pagination, feeds."""

from __future__ import annotations

import base64
import io
import json
import tarfile
from pathlib import Path

import httpx
import pytest

from skills_registry.archive import build_archive, read_dir, sha256_hex
from skills_registry.registry.signing import verify_release
from tests.registry.conftest import FIXTURES, LiveRegistry, blob_names, make_skill
from tests.registry.hostile import CASES

HTTP = httpx.Client(timeout=30)  # one pool for the module: fast, like a real client


@pytest.fixture
def registry(backend_registry: LiveRegistry) -> LiveRegistry:
    """Every API test runs on each backend pair (SQLite + folder, PostgreSQL + S3)."""
    return backend_registry


def _publish(
    reg: LiveRegistry, token: str, skill_id: str, version: str, archive: bytes
) -> httpx.Response:
    return HTTP.put(
        f"{reg.url}/v1/skills/{skill_id}/versions/{version}",
        content=archive,
        headers={"Authorization": f"Bearer {token}"},
    )


def _archive(folder: Path) -> bytes:
    return build_archive(read_dir(folder))


def test_publish_then_read_everything(registry: LiveRegistry, tmp_path: Path) -> None:
    token = registry.token("acme")
    archive = _archive(FIXTURES / "internal-comms")
    created = _publish(registry, token, "acme/internal-comms", "1.0.0", archive)
    assert created.status_code == 201, created.text
    doc = created.json()
    assert doc["archiveSha256"] == sha256_hex(archive)
    assert {"path": "SKILL.md"}.items() <= next(
        f for f in doc["files"] if f["path"] == "SKILL.md"
    ).items()

    info = HTTP.get(f"{registry.url}/.well-known/kiln-registry.json").json()
    key = info["keys"][0]
    sig = doc["signatures"][0]
    assert sig["keyId"] == key["keyId"]
    assert verify_release(
        key["publicKey"], "acme/internal-comms", "1.0.0", doc["archiveSha256"], sig["signature"]
    )

    base = f"{registry.url}/v1/skills/acme/internal-comms"
    detail = HTTP.get(base).json()
    assert detail["distTags"] == {"latest": "1.0.0"} and detail["status"] == "active"
    assert [v["version"] for v in HTTP.get(f"{base}/versions").json()["versions"]] == ["1.0.0"]

    download = HTTP.get(f"{base}/versions/1.0.0/archive")
    assert download.content == archive
    etag = download.headers["etag"]
    assert etag == f'"{doc["archiveSha256"]}"'
    assert (
        HTTP.get(f"{base}/versions/1.0.0/archive", headers={"If-None-Match": etag}).status_code
        == 304
    )
    part = HTTP.get(f"{base}/versions/1.0.0/archive", headers={"Range": "bytes=0-99"})
    assert part.status_code == 206 and part.content == archive[:100]

    preview = HTTP.get(f"{base}/versions/1.0.0/files/examples/faq-answers.md")
    assert preview.status_code == 200 and preview.headers["content-type"].startswith("text/plain")
    assert preview.content == (FIXTURES / "internal-comms/examples/faq-answers.md").read_bytes()
    assert HTTP.get(f"{base}/versions/1.0.0/files/../../registry.db").status_code == 404

    market = HTTP.get(f"{registry.url}/.claude-plugin/marketplace.json").json()
    assert market["owner"]["name"] and market["plugins"][0]["name"] == "acme-internal-comms"
    plugin = market["plugins"][0]
    assert plugin["strict"] is False
    assert plugin["source"]["url"] == f"{registry.url}/git/acme/internal-comms.git"
    assert plugin["kiln"]["archive"].endswith("/versions/1.0.0/archive")

    from skills_registry.archive import tree_hash_dir
    from skills_registry.registry.marketplace import export_marketplace

    reg = registry.app.state.registry  # type: ignore[attr-defined]
    export_marketplace(reg.store, reg.blobs, registry.url, tmp_path / "market")
    written = json.loads((tmp_path / "market/.claude-plugin/marketplace.json").read_text())
    assert written["plugins"][0]["source"] == "./skills/acme/internal-comms"  # a folder: relative
    assert tree_hash_dir(tmp_path / "market/skills/acme/internal-comms") == doc["treeHash"]


def test_publish_rules(registry: LiveRegistry, tmp_path: Path) -> None:
    token = registry.token("acme")
    archive = _archive(FIXTURES / "brand-guidelines")
    assert _publish(registry, token, "acme/brand-guidelines", "1.0.0", archive).status_code == 201
    again = _publish(registry, token, "acme/brand-guidelines", "1.0.0", archive)
    assert again.status_code == 409 and "already published" in again.json()["error"]["message"]

    other = _publish(registry, token, "someone/brand-guidelines", "1.0.0", archive)
    assert (
        other.status_code == 403
        and "scoped to namespace 'acme'" in other.json()["error"]["message"]
    )
    assert (
        _publish(registry, "kiln_bogus", "acme/brand-guidelines", "1.0.1", archive).status_code
        == 401
    )
    assert (
        HTTP.put(
            f"{registry.url}/v1/skills/acme/brand-guidelines/versions/1.0.1", content=archive
        ).status_code
        == 401
    )

    bad = make_skill(tmp_path, "bad-skill", description="", front="colour: blue\n")
    # a malformed version is refused before the body is read (docs/registry.md), alone
    invalid = _publish(registry, token, "acme/bad-skill", "1.x", _archive(bad))
    assert invalid.status_code == 422
    assert invalid.json()["errors"] == ["invalid version '1.x': use exact SemVer such as 1.2.3"]
    invalid = _publish(registry, token, "acme/bad-skill", "1.0.0", _archive(bad))
    assert invalid.status_code == 422
    errors = invalid.json()["errors"]
    assert len(errors) >= 2
    assert any("description" in e for e in errors)
    assert any("colour" in e for e in errors)

    # SKILL.md saying another version than the one published (clients refuse it too)
    stated = make_skill(tmp_path, "stated", front='metadata:\n  version: "2.0.0"\n')
    mismatch = _publish(registry, token, "acme/stated", "1.0.0", _archive(stated))
    assert mismatch.status_code == 422, mismatch.text
    assert "metadata.version is '2.0.0', not '1.0.0'" in mismatch.json()["errors"][0]
    assert _publish(registry, token, "acme/stated", "2.0.0", _archive(stated)).status_code == 201


@pytest.mark.parametrize(
    "case",
    [
        "zip-slip",
        "symlink",
        "hardlink",
        "device",
        "declared-1gb",
        "gzip-bomb",
        "duplicate",
        "invalid-utf8",
        "absolute",
    ],
)
def test_hostile_publish_rejected(registry: LiveRegistry, case: str) -> None:
    token = registry.token("acme")
    before = blob_names(registry)
    builder, words = CASES[case]
    response = _publish(registry, token, "acme/evil", "1.0.0", builder())
    assert response.status_code == 422
    assert any(words in e for e in response.json()["errors"])
    assert blob_names(registry) == before
    assert HTTP.get(f"{registry.url}/v1/skills/acme/evil").status_code == 404


def test_oversized_bodies_are_refused(registry: LiveRegistry, tmp_path: Path) -> None:
    token = registry.token("acme")
    headers = {"Authorization": f"Bearer {token}"}
    big = b"\x1f\x8b" + b"\0" * (9 * 1024 * 1024)
    assert (
        HTTP.put(
            f"{registry.url}/v1/skills/acme/big/versions/1.0.0", content=big, headers=headers
        ).status_code
        == 413
    )
    assert (
        _publish(
            registry,
            token,
            "acme/brand-guidelines",
            "1.0.0",
            _archive(FIXTURES / "brand-guidelines"),
        ).status_code
        == 201
    )
    url = f"{registry.url}/v1/skills/acme/brand-guidelines/versions/1.0.0/status"
    huge = json.dumps({"status": "yanked", "reason": "x" * 100_000})
    response = HTTP.put(url, content=huge, headers={**headers, "Content-Type": "application/json"})
    assert response.status_code == 413 and "limit" in response.json()["error"]["message"]

    def chunks():  # no Content-Length: the cap must hold while streaming
        for _ in range(100):
            yield b" " * 1024

    assert HTTP.put(url, content=chunks(), headers=headers).status_code == 413
    assert HTTP.get(f"{registry.url}/v1/skills/acme/brand-guidelines").json()["status"] == "active"


def _skill_archive(name: str, description: str) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        data = f"---\nname: {name}\ndescription: {description}\n---\nbody\n".encode()
        info = tarfile.TarInfo(f"{name}/SKILL.md")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    import gzip

    return gzip.compress(raw.getvalue())


def test_search_pagination_yank_tags_and_feed(registry: LiveRegistry) -> None:
    token = registry.token("acme")
    for i in range(7):
        desc = "Render PDF reports" if i % 2 else "Lint YAML files"
        assert (
            _publish(
                registry, token, f"acme/tool-{i}", "1.0.0", _skill_archive(f"tool-{i}", desc)
            ).status_code
            == 201
        )
    for version in ("1.1.0", "2.0.0-rc.1"):
        assert (
            _publish(
                registry, token, "acme/tool-0", version, _skill_archive("tool-0", "Lint YAML files")
            ).status_code
            == 201
        )

    hits = HTTP.get(f"{registry.url}/v1/skills", params={"q": "pdf"}).json()["skills"]
    assert {h["id"] for h in hits} == {"acme/tool-1", "acme/tool-3", "acme/tool-5"}
    seen, cursor = [], None
    while True:
        page = HTTP.get(
            f"{registry.url}/v1/skills",
            params={"limit": 3, **({"cursor": cursor} if cursor else {})},
        ).json()
        seen += [s["id"] for s in page["skills"]]
        cursor = page["metadata"]["nextCursor"]
        if cursor is None:
            break
    assert seen == sorted(f"acme/tool-{i}" for i in range(7))
    assert HTTP.get(f"{registry.url}/v1/skills", params={"cursor": "garbage!"}).status_code == 400
    assert (
        HTTP.get(f"{registry.url}/v1/skills", params={"updated_since": "2999-01-01"}).json()[
            "skills"
        ]
        == []
    )

    base = f"{registry.url}/v1/skills/acme/tool-0"
    auth = {"Authorization": f"Bearer {token}"}
    assert HTTP.get(base).json()["distTags"]["latest"] == "1.1.0"
    yanked = HTTP.put(
        f"{base}/versions/1.1.0/status", json={"status": "yanked", "reason": "broken"}, headers=auth
    )
    assert yanked.status_code == 200 and yanked.json()["status"] == "yanked"
    assert HTTP.get(base).json()["distTags"]["latest"] == "1.0.0"
    assert (
        HTTP.get(f"{base}/versions/1.1.0/archive").status_code == 200
    )  # still downloadable exactly
    tagged = HTTP.put(f"{base}/dist-tags/next", json={"version": "2.0.0-rc.1"}, headers=auth)
    assert tagged.json()["distTags"] == {"latest": "1.0.0", "next": "2.0.0-rc.1"}
    assert (
        HTTP.put(f"{base}/deprecation", json={"message": "use tool-1"}, headers=auth).json()[
            "status"
        ]
        == "deprecated"
    )

    feed = HTTP.get(f"{registry.url}/v1/changes", params={"since": 0, "limit": 1000}).json()
    kinds = [(c["id"], c["kind"]) for c in feed["changes"]]
    assert kinds[-3:] == [
        ("acme/tool-0", "yanked"),
        ("acme/tool-0", "dist-tag:next"),
        ("acme/tool-0", "deprecate"),
    ]
    later = HTTP.get(
        f"{registry.url}/v1/changes", params={"since": feed["metadata"]["nextSince"]}
    ).json()
    assert later["changes"] == []


def test_tool_schemas_are_served_without_download(registry: LiveRegistry, tmp_path: Path) -> None:
    schema = {
        "name": "lint_yaml",
        "description": "Lint a YAML file",
        "command": "scripts/lint.py",
        "input_schema": {"type": "object"},
    }
    skill = make_skill(
        tmp_path,
        "yaml-tools",
        extra={"tools/lint_yaml.json": json.dumps(schema), "scripts/lint.py": "print('ok')\n"},
    )
    token = registry.token("acme")
    assert _publish(registry, token, "acme/yaml-tools", "0.1.0", _archive(skill)).status_code == 201
    tools = HTTP.get(f"{registry.url}/v1/skills/acme/yaml-tools/versions/0.1.0/tools").json()[
        "tools"
    ]
    assert tools == [{"path": "tools/lint_yaml.json", **schema}]
    broken = make_skill(tmp_path / "b", "yaml-tools", extra={"tools/bad.json": "{not json"})
    response = _publish(registry, token, "acme/yaml-tools", "0.2.0", _archive(broken))
    assert response.status_code == 422 and "tools/bad.json" in response.json()["errors"][0]


def test_signing_key_persists_across_restarts(tmp_path: Path) -> None:
    from tests.registry.conftest import start_registry

    first = start_registry(tmp_path / "data")
    key1 = HTTP.get(f"{first.url}/.well-known/kiln-registry.json").json()["keys"][0]
    first.stop()
    second = start_registry(tmp_path / "data")
    try:
        key2 = HTTP.get(f"{second.url}/.well-known/kiln-registry.json").json()["keys"][0]
    finally:
        second.stop()
    assert key1 == key2
    assert len(base64.b64decode(key1["publicKey"])) == 32
    assert ((tmp_path / "data/keys/ed25519.key").stat().st_mode & 0o777) == 0o600


def test_search_cache_sees_writes_from_other_connections(tmp_path: Path) -> None:
    from skills_registry.registry.sqlite_store import SQLiteStore
    from skills_registry.registry.storage import now_iso

    reader, writer = SQLiteStore(tmp_path / "r.db"), SQLiteStore(tmp_path / "r.db")
    doc = {
        "id": "acme/pdf-tool",
        "version": "1.0.0",
        "publishedAt": now_iso(),
        "description": "PDF tool",
        "archiveSha256": "0" * 64,
    }
    assert reader.search("pdf")[0] == []
    writer.add_version(doc)  # another connection, as another server process would be
    assert [s["id"] for s in reader.search("pdf")[0]] == ["acme/pdf-tool"]
    reader.add_version({**doc, "id": "acme/pdf-two"})
    assert len(reader.search("pdf")[0]) == 2


class MemoryBlobs:
    """A blob store with no local files, like object storage: the app must not need paths."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        sha = sha256_hex(data)
        self.data[sha] = data
        return sha

    def get(self, sha256: str) -> bytes:
        return self.data[sha256]

    def path(self, sha256: str) -> None:
        return None


def test_storage_seam_accepts_a_blob_store_without_files(tmp_path: Path) -> None:
    from skills_registry.registry.app import create_app_with
    from skills_registry.registry.signing import load_or_create_signer
    from skills_registry.registry.sqlite_store import SQLiteStore
    from tests.registry.conftest import start_registry

    blobs = MemoryBlobs()
    app = create_app_with(SQLiteStore(tmp_path / "meta.db"), blobs, load_or_create_signer(tmp_path))
    live = start_registry(tmp_path, app)
    try:
        archive = _archive(FIXTURES / "brand-guidelines")
        assert (
            _publish(
                live, live.token("acme"), "acme/brand-guidelines", "1.0.0", archive
            ).status_code
            == 201
        )
        assert list(blobs.data) == [sha256_hex(archive)]
        got = HTTP.get(f"{live.url}/v1/skills/acme/brand-guidelines/versions/1.0.0/archive")
        assert got.status_code == 200 and got.content == archive
        preview = HTTP.get(
            f"{live.url}/v1/skills/acme/brand-guidelines/versions/1.0.0/files/SKILL.md"
        )
        assert preview.content == (FIXTURES / "brand-guidelines/SKILL.md").read_bytes()
    finally:
        live.stop()
