"""A deployment's view: `kiln registry` processes on PostgreSQL + S3, probes, metrics, logs,
presigned downloads, orphan sweeping, one signing key, and copying a registry between backends.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import httpx
import pytest

from skills_registry.archive import build_archive, read_dir
from skills_registry.registry.app import create_app
from skills_registry.registry.backends import open_backends, sweep_orphans
from skills_registry.registry.errors import Conflict, UsageError
from skills_registry.registry.signing import load_or_create_key_file, verify_release
from tests.registry.conftest import FIXTURES, cli_env, kiln, start_registry
from tests.registry.servers import Postgres, S3Server

pytestmark = [pytest.mark.e2e]


def _put(url: str, token: str, skill_id: str, version: str, archive: bytes) -> httpx.Response:
    return httpx.put(
        f"{url}/v1/skills/{skill_id}/versions/{version}",
        content=archive,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )


ARCHIVE = build_archive(read_dir(FIXTURES / "internal-comms"))


def test_presigned_redirects_probes_and_metrics(
    postgres: Postgres, s3: S3Server, tmp_path: Path
) -> None:
    bucket = s3.new_bucket()
    app = create_app(
        tmp_path, db=postgres.new_database(), blobs=f"s3://{bucket}/a", redirect_downloads=True
    )
    live = start_registry(tmp_path, app)
    try:
        token = live.token("acme")
        doc = _put(live.url, token, "acme/internal-comms", "1.0.0", ARCHIVE).json()
        url = f"{live.url}/v1/skills/acme/internal-comms/versions/1.0.0/archive"
        moved = httpx.get(url)
        assert moved.status_code == 302 and moved.headers["etag"] == f'"{doc["archiveSha256"]}"'
        assert moved.headers["location"].startswith(s3.endpoint + f"/{bucket}/a/")
        assert httpx.get(moved.headers["location"]).content == ARCHIVE  # the bucket serves it
        assert httpx.get(url, follow_redirects=True).content == ARCHIVE

        assert httpx.get(f"{live.url}/healthz").json() == {"status": "ok"}
        ready = httpx.get(f"{live.url}/readyz")
        assert ready.status_code == 200 and ready.json()["checks"] == {
            "database": "ok",
            "blobs": "ok",
        }
        text = httpx.get(f"{live.url}/metrics").text
        assert "kiln_registry_publishes_total 1.0" in text
        assert 'kiln_registry_downloads_total{mode="redirect"} 2.0' in text
        assert re.search(
            r'kiln_registry_request_seconds_count\{method="PUT",route="publish",status="201"\} 1\.0',
            text,
        )
        assert re.search(
            r'kiln_registry_request_seconds_bucket\{le="0\.5",method="GET",route="download",status="302"\} 2\.0',
            text,
        )
    finally:
        live.stop()


def test_readyz_fails_when_the_bucket_is_unreachable(
    postgres: Postgres, s3: S3Server, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The unauthenticated probe says which check failed and its kind; the failure's text (for a
    database, its host and user) goes to the operator's log only."""
    app = create_app(tmp_path, db=postgres.new_database(), blobs="s3://no-such-bucket/x")
    live = start_registry(tmp_path, app)
    try:
        with caplog.at_level("WARNING", logger="kiln.registry.ready"):
            ready = httpx.get(f"{live.url}/readyz")
        assert ready.status_code == 503
        body = ready.json()
        assert body["checks"]["database"] == "ok"
        assert re.fullmatch(r"error: \w+", body["checks"]["blobs"]), body
        assert "HeadBucket" not in ready.text and "Not Found" not in ready.text
        assert "HeadBucket operation: Not Found" in caplog.text  # the operator still learns why
        assert httpx.get(f"{live.url}/healthz").status_code == 200  # alive, just not ready
    finally:
        live.stop()


def test_streamed_ranges_from_s3(postgres: Postgres, s3: S3Server, tmp_path: Path) -> None:
    app = create_app(tmp_path, db=postgres.new_database(), blobs=f"s3://{s3.new_bucket()}")
    live = start_registry(tmp_path, app)
    try:
        _put(live.url, live.token("acme"), "acme/internal-comms", "1.0.0", ARCHIVE)
        url = f"{live.url}/v1/skills/acme/internal-comms/versions/1.0.0/archive"
        tail = httpx.get(url, headers={"Range": "bytes=-10"})
        assert tail.status_code == 206 and tail.content == ARCHIVE[-10:]
        assert (
            tail.headers["content-range"]
            == f"bytes {len(ARCHIVE) - 10}-{len(ARCHIVE) - 1}/{len(ARCHIVE)}"
        )
        middle = httpx.get(url, headers={"Range": "bytes=5-9"})
        assert middle.status_code == 206 and middle.content == ARCHIVE[5:10]
        assert httpx.get(url, headers={"Range": f"bytes={len(ARCHIVE) + 5}-"}).status_code == 416
    finally:
        live.stop()


def test_orphan_archives_are_swept_and_referenced_ones_kept(
    postgres: Postgres, s3: S3Server, tmp_path: Path
) -> None:
    backends = open_backends(tmp_path, postgres.new_database(), f"s3://{s3.new_bucket()}/p")
    app = create_app(tmp_path, db=backends.db_url, blobs=backends.blobs_url)
    live = start_registry(tmp_path, app)
    try:
        doc = _put(live.url, live.token("acme"), "acme/internal-comms", "1.0.0", ARCHIVE).json()
    finally:
        live.stop()
    orphan = backends.blobs.put(b"left by a publish that died before its version row")
    assert sweep_orphans(backends.store, backends.blobs) == []  # young: may be in flight
    assert sweep_orphans(backends.store, backends.blobs, older_than=-60) == [orphan]
    assert backends.blobs.size(orphan) is None
    assert backends.blobs.get(doc["archiveSha256"]) == ARCHIVE
    backends.close()


def test_instances_with_different_keys_are_refused(postgres: Postgres, tmp_path: Path) -> None:
    db = postgres.new_database()
    create_app(tmp_path / "a", db=db, signing_key=tmp_path / "a.key")
    create_app(tmp_path / "b", db=db, signing_key=tmp_path / "a.key")  # same key: fine
    load_or_create_key_file(tmp_path / "other.key")
    with pytest.raises(Conflict, match="signed with ed25519:"):
        create_app(tmp_path / "c", db=db, signing_key=tmp_path / "other.key")
    with pytest.raises(UsageError, match="no signing key at .*signed with ed25519:"):
        create_app(tmp_path / "d", db=db, signing_key=tmp_path / "missing.key")
    assert not (tmp_path / "missing.key").exists()
    assert stat.S_IMODE((tmp_path / "a.key").stat().st_mode) == 0o600


@pytest.fixture
def cli_server_env(s3: S3Server, tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path / "home", **s3.env())


def _serve(args: list[str], env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "registry", "serve", "--port", "0", *args],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"listening on (http://\S+)", line)
    try:
        assert match, line + proc.stderr.read()
        yield match.group(1), proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_cli_serve_on_postgres_and_s3_with_json_access_log(
    postgres: Postgres, s3: S3Server, cli_server_env: dict[str, str], tmp_path: Path
) -> None:
    db, blobs = postgres.new_database(), f"s3://{s3.new_bucket()}/skills"
    key = tmp_path / "shared.key"
    token = kiln(
        "registry", "token", "--db", db, "--namespace", "acme", env=cli_server_env, cwd=tmp_path
    )
    assert token.returncode == 0, token.stderr
    args = ["--db", db, "--blobs", blobs, "--signing-key", str(key), "--access-log"]
    for url, proc in _serve(args, cli_server_env):
        assert "listening" in url or url.startswith("http://")
        created = _put(url, token.stdout.strip(), "acme/internal-comms", "1.0.0", ARCHIVE)
        assert created.status_code == 201, created.text
        assert proc.stderr is not None
        entry = json.loads(proc.stderr.readline())
        assert entry["route"] == "publish" and entry["status"] == 201 and entry["method"] == "PUT"
        info = httpx.get(f"{url}/.well-known/kiln-registry.json").json()
        assert info["keys"][0]["keyId"] == load_or_create_key_file(key).key_id

    other = kiln(
        "registry", "serve", "--port", "0", "--db", db, "--blobs", blobs,
        "--signing-key", str(tmp_path / "other.key"), env=cli_server_env, cwd=tmp_path,
    )  # fmt: skip
    assert other.returncode == 2  # the operator's configuration (docs/registry.md, exit codes)
    assert len(other.stderr.strip().splitlines()) == 1 and "signed with" in other.stderr
    bad = kiln("registry", "serve", "--db", "mysql://x", env=cli_server_env, cwd=tmp_path)
    assert bad.returncode == 2 and "unknown database URL" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_migrate_both_ways_verified_and_idempotent(
    postgres: Postgres, s3: S3Server, cli_server_env: dict[str, str], tmp_path: Path
) -> None:
    src = tmp_path / "src"
    live = start_registry(src)
    token = live.token("acme")
    base = f"{live.url}/v1/skills/acme/internal-comms"
    other = build_archive(read_dir(FIXTURES / "brand-guidelines"))
    auth = {"Authorization": f"Bearer {token}"}
    try:
        for version in ("1.0.0", "1.1.0", "2.0.0-rc.1"):
            assert _put(live.url, token, "acme/internal-comms", version, ARCHIVE).status_code == 201
        assert _put(live.url, token, "acme/brand-guidelines", "0.1.0", other).status_code == 201
        httpx.put(
            f"{base}/versions/1.1.0/status",
            json={"status": "yanked", "reason": "bad"},
            headers=auth,
        )
        httpx.put(f"{base}/dist-tags/next", json={"version": "2.0.0-rc.1"}, headers=auth)
        httpx.put(
            f"{live.url}/v1/skills/acme/brand-guidelines/deprecation",
            json={"message": "use x"},
            headers=auth,
        )
        before = {
            v: httpx.get(f"{base}/versions/{v}").json() for v in ("1.0.0", "1.1.0", "2.0.0-rc.1")
        }
    finally:
        live.stop()

    db, bucket = postgres.new_database(), s3.new_bucket()
    forward = [
        "registry", "migrate", "--from", f"sqlite://{src}/registry.db", "--from-blobs",
        f"file://{src}/blobs", "--to", db, "--to-blobs", f"s3://{bucket}/m",
        "--signing-key", str(src / "keys/ed25519.key"),
    ]  # fmt: skip
    first = kiln(*forward, env=cli_server_env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "2 skills: 4 versions copied, 0 already present" in first.stdout
    again = kiln(*forward, env=cli_server_env, cwd=tmp_path)
    assert "4 already present" in again.stdout and "0 versions copied" in again.stdout

    app = create_app(
        tmp_path / "t", db=db, blobs=f"s3://{bucket}/m", signing_key=src / "keys/ed25519.key"
    )
    target = start_registry(tmp_path / "t", app)
    try:
        tbase = f"{target.url}/v1/skills/acme/internal-comms"
        detail = httpx.get(tbase).json()
        assert detail["distTags"] == {"latest": "1.0.0", "next": "2.0.0-rc.1"}
        for version, doc in before.items():
            assert httpx.get(f"{tbase}/versions/{version}").json() == doc
        assert httpx.get(f"{tbase}/versions/1.0.0/archive").content == ARCHIVE
        key = httpx.get(f"{target.url}/.well-known/kiln-registry.json").json()["keys"][0]
        sig = before["1.0.0"]["signatures"][0]["signature"]
        assert verify_release(
            key["publicKey"], "acme/internal-comms", "1.0.0", before["1.0.0"]["archiveSha256"], sig
        )
        assert (
            httpx.get(f"{target.url}/v1/skills/acme/brand-guidelines").json()["deprecated"]
            == "use x"
        )
    finally:
        target.stop()

    back = tmp_path / "back"
    backward = [
        "registry", "migrate", "--from", db, "--from-blobs", f"s3://{bucket}/m",
        "--to", f"sqlite://{back}/registry.db", "--to-blobs", f"file://{back}/blobs",
        "--signing-key", str(src / "keys/ed25519.key"),
    ]  # fmt: skip
    result = kiln(*backward, env=cli_server_env, cwd=tmp_path)
    assert result.returncode == 0 and "4 versions copied" in result.stdout, result.stderr


def test_migrate_refuses_a_tampered_archive(
    postgres: Postgres, s3: S3Server, cli_server_env: dict[str, str], tmp_path: Path
) -> None:
    src = tmp_path / "src"
    live = start_registry(src)
    try:
        doc = _put(live.url, live.token("acme"), "acme/internal-comms", "1.0.0", ARCHIVE).json()
    finally:
        live.stop()
    sha = doc["archiveSha256"]
    (src / "blobs" / sha[:2] / sha).write_bytes(
        ARCHIVE[:20] + bytes([ARCHIVE[20] ^ 1]) + ARCHIVE[21:]
    )
    db, bucket = postgres.new_database(), s3.new_bucket()
    result = kiln(
        "registry", "migrate", "--from", f"sqlite://{src}/registry.db", "--from-blobs",
        f"file://{src}/blobs", "--to", db, "--to-blobs", f"s3://{bucket}",
        "--signing-key", str(src / "keys/ed25519.key"), env=cli_server_env, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    assert "does not match its sha256" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    backends = open_backends(tmp_path, db, f"s3://{bucket}")
    assert backends.store.get_version("acme/internal-comms", "1.0.0") is None
    listing = boto3.client("s3", endpoint_url=s3.endpoint).list_objects_v2(Bucket=bucket)
    assert listing.get("KeyCount", 0) == 0
    backends.close()


def test_serve_without_the_server_extra_says_how_to_install_it(tmp_path: Path) -> None:
    """The client side works without starlette/uvicorn; `serve` names the extra to install."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "uvicorn.py").write_text("raise ImportError('uvicorn is not installed')\n")
    env = cli_env(
        tmp_path / "home",
        PYTHONPATH=os.pathsep.join([str(shadow), os.environ.get("PYTHONPATH", "")]),
    )
    result = kiln("registry", "serve", "--port", "0", env=env, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "kiln: the registry server needs its extra: pip install 'kiln-agent[registry]'"
    ]
