"""Publish quotas: one namespace's stored bytes, a skill's versions, publishes per hour.

A namespace with a token could publish without end and fill the registry's disk or database.
Each test runs a real registry on a loopback port over each backend pair (SQLite + a folder,
PostgreSQL + S3) and checks what a refused publish answers and that it stored nothing; the
rate limit is also met by a real `kiln skills publish` against a real `kiln registry serve`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from skills_registry.archive import build_archive, read_dir
from skills_registry.registry.app import create_app
from skills_registry.registry.errors import QuotaExceeded
from skills_registry.registry.pg_store import PostgresStore
from skills_registry.registry.publish import build_release
from skills_registry.registry.quotas import Quotas
from skills_registry.registry.signing import load_or_create_key_file
from tests.registry.conftest import (
    BACKENDS,
    LiveRegistry,
    backend_urls,
    blob_names,
    cli_env,
    fails,
    kiln,
    make_skill,
    ok,
    serving,
    start_registry,
)
from tests.registry.servers import Postgres

pytestmark = pytest.mark.e2e


@pytest.fixture(params=BACKENDS)
def quota_registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """``start(quotas)``: a live registry with those quotas over each backend pair in turn."""
    started: list[tuple[LiveRegistry, Any]] = []

    def start(quotas: Quotas) -> LiveRegistry:
        data = tmp_path / "registry-data"
        db, blobs = backend_urls(request.param, data, request)
        app = create_app(data, db=db, blobs=blobs, quotas=quotas)
        live = start_registry(data, app)
        started.append((live, app))
        return live

    yield start
    for live, app in started:
        live.stop()
        close = getattr(app.state.registry.store, "close", None)
        if close is not None:
            close()


def _archive(root: Path, name: str, body: str) -> bytes:
    folder = root / f"src-{abs(hash(body))}"
    return build_archive(read_dir(make_skill(folder, name, body=body)))


def _put(
    live: LiveRegistry, token: str, skill_id: str, version: str, data: bytes
) -> httpx.Response:
    return httpx.put(
        f"{live.url}/v1/skills/{skill_id}/versions/{version}",
        content=data,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/gzip"},
        timeout=60,
    )


def test_a_namespace_at_its_byte_quota_is_refused_and_nothing_is_stored(
    quota_registry: Any, tmp_path: Path
) -> None:
    first = _archive(tmp_path, "notes", "# First\n")
    second = _archive(tmp_path, "notes", "# Second, a little longer\n" * 20)
    limit = len(first) + len(second) - 1  # the first fits, both do not
    live = quota_registry(Quotas(namespace_bytes=limit))
    token, other = live.token("acme"), live.token("other")
    assert _put(live, token, "acme/notes", "1.0.0", first).status_code == 201
    blobs, feed = blob_names(live), httpx.get(f"{live.url}/v1/changes").json()
    refused = _put(live, token, "acme/notes", "1.1.0", second)
    assert refused.status_code == 413, refused.text
    error = refused.json()["error"]
    assert error["code"] == "quota_exceeded"
    assert (error["quota"], error["usage"], error["limit"]) == ("namespaceBytes", len(first), limit)
    assert "namespaceBytes" in error["message"] and str(limit) in error["message"]
    assert blob_names(live) == blobs  # no blob left behind
    assert httpx.get(f"{live.url}/v1/changes").json() == feed  # no row, no feed entry
    versions = httpx.get(f"{live.url}/v1/skills/acme/notes/versions").json()["versions"]
    assert [v["version"] for v in versions] == ["1.0.0"]
    # another namespace has its own quota
    assert _put(live, other, "other/notes", "1.0.0", second).status_code == 201
    limits = httpx.get(f"{live.url}/.well-known/kiln-registry.json").json()["limits"]
    assert limits["namespaceBytes"] == limit
    assert limits["versionsPerSkill"] == 1000 and limits["publishesPerHour"] == 60


def test_a_skill_at_its_version_quota_is_refused(quota_registry: Any, tmp_path: Path) -> None:
    live = quota_registry(Quotas(versions_per_skill=2))
    token = live.token("acme")
    archives = [_archive(tmp_path, "notes", f"# Take {i}\n") for i in range(3)]
    assert _put(live, token, "acme/notes", "1.0.0", archives[0]).status_code == 201
    assert _put(live, token, "acme/notes", "1.0.1", archives[1]).status_code == 201
    blobs = blob_names(live)
    refused = _put(live, token, "acme/notes", "1.0.2", archives[2])
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["quota"], error["usage"], error["limit"]) == (
        "quota_exceeded",
        "versionsPerSkill",
        2,
        2,
    )
    assert blob_names(live) == blobs
    assert httpx.get(f"{live.url}/v1/skills/acme/notes/versions/1.0.2").status_code == 404
    # the quota is per skill: another skill of the namespace still publishes
    other = _archive(tmp_path, "diary", "# Diary\n")
    assert _put(live, token, "acme/diary", "1.0.0", other).status_code == 201
    limits = httpx.get(f"{live.url}/.well-known/kiln-registry.json").json()["limits"]
    assert limits["versionsPerSkill"] == 2


def test_past_the_publish_rate_a_429_says_when_to_retry(
    quota_registry: Any, tmp_path: Path
) -> None:
    live = quota_registry(Quotas(publishes_per_hour=2))
    token = live.token("acme")
    archives = [_archive(tmp_path, "notes", f"# Take {i}\n") for i in range(3)]
    assert _put(live, token, "acme/notes", "1.0.0", archives[0]).status_code == 201
    assert _put(live, token, "acme/notes", "1.0.1", archives[1]).status_code == 201
    blobs = blob_names(live)
    refused = _put(live, token, "acme/notes", "1.0.2", archives[2])
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["code"] == "rate_limited"
    assert 3500 < int(refused.headers["retry-after"]) <= 3600
    assert blob_names(live) == blobs
    # another namespace publishes at its own rate
    other = live.token("other")
    assert _put(live, other, "other/notes", "1.0.0", archives[2]).status_code == 201


def test_the_client_shows_when_to_retry_and_exits_refused(tmp_path: Path) -> None:
    data, home = tmp_path / "data", tmp_path / "home"
    env = cli_env(home)
    token = ok(kiln("registry", "token", "--data", str(data), "--namespace", "acme", env=env,
                    cwd=tmp_path)).strip()  # fmt: skip
    folder = make_skill(tmp_path / "src", "notes")
    with serving(data, home, "--publishes-per-hour", "1") as port:
        url = f"http://127.0.0.1:{port}"
        args = ("skills", "publish", str(folder), "--registry", url, "--token", token)
        ok(kiln(*args, "--version", "1.0.0", env=env, cwd=tmp_path))
        refused = kiln(*args, "--version", "1.0.1", env=env, cwd=tmp_path)
        fails(refused, 5, "the limit (publishesPerHour) is 1; retry after ")
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "UTC (in 3" in refused.stderr, refused.stderr
        limits = httpx.get(f"{url}/.well-known/kiln-registry.json").json()["limits"]
        assert limits["publishesPerHour"] == 1


def test_instances_sharing_postgresql_count_one_usage(postgres: Postgres, tmp_path: Path) -> None:
    """Eight publishes racing through four stores (four `serve` processes' worth) on one
    database, with room for three: exactly three land, whichever instance took them."""
    url = postgres.new_database()
    signer = load_or_create_key_file(tmp_path / "key")
    stores = [PostgresStore(url, max_size=2) for _ in range(4)]
    docs = [
        build_release(
            "acme/race", f"1.0.{i}", _archive(tmp_path / f"v{i}", "race", f"# {i}\n"), signer
        )
        for i in range(8)
    ]
    quotas = Quotas(versions_per_skill=3)
    barrier = threading.Barrier(8)

    def publish(i: int) -> str:
        barrier.wait()
        try:
            stores[i % 4].add_version(docs[i], quotas)
            return "stored"
        except QuotaExceeded:
            return "refused"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(publish, range(8)))
    assert sorted(outcomes) == ["refused"] * 5 + ["stored"] * 3
    assert len(stores[0].versions("acme/race")) == 3
    for store in stores:
        store.close()


@pytest.mark.parametrize(
    ("variable", "value", "words"),
    [
        ("KILN_REGISTRY_VERSIONS_PER_SKILL", "abc", "'abc' is not a whole number"),
        ("KILN_REGISTRY_PUBLISHES_PER_HOUR", "0", "0 is not in the range"),
        ("KILN_REGISTRY_NAMESPACE_BYTES", "-5", "-5 is not in the range"),
    ],
)
def test_a_bad_quota_variable_is_refused_under_its_own_name(
    tmp_path: Path, variable: str, value: str, words: str
) -> None:
    """The docs offer each quota as an option or a variable; a bad variable was refused as
    "Invalid value for '--versions-per-skill'", an option nobody typed."""
    data = tmp_path / "data"
    env = cli_env(tmp_path / "home", **{variable: value})
    refused = kiln("registry", "serve", "--port", "0", "--data", str(data), env=env, cwd=tmp_path)
    fails(refused, 2, f"Invalid value for {variable} (read for --")
    assert words in refused.stderr and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert not data.exists()
