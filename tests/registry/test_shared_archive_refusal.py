"""A publish refused for quota leaves its archive: another namespace may be about to name it.

Archives are stored by content and hold no namespace, so `a/notes` and `b/notes` published from
the same folder are the same bytes. A publish refused in the transaction that inserts its
version (another publish of its namespace took the room since its early check) deleted the
archive when no version referenced it yet; a publish of `b/notes` that had just stored those
bytes then wrote a version pointing at a missing archive. The refusal now leaves the archive,
and `kiln registry sweep` removes it later if nothing names it.

The order is made with the database's own write lock: the test holds it while the refused
publish stores its archive and waits for it, stores the same bytes as `b/notes`' publish does,
then takes the lock back to store `a/other` (the publish that took the room) before the waiting
publish gets it, and last writes `b/notes`' version.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from pathlib import Path

import httpx
import pytest

from skills_registry.archive import build_archive, read_dir
from skills_registry.registry.app import create_app
from skills_registry.registry.errors import RateLimited
from skills_registry.registry.publish import build_release
from skills_registry.registry.quotas import Quotas
from skills_registry.registry.sqlite_store import SQLiteStore
from tests.registry.conftest import make_skill, start_registry

pytestmark = pytest.mark.e2e


def _refused_then_named(tmp_path: Path, attempt: int) -> tuple[httpx.Response, bytes, str]:
    data = tmp_path / f"data{attempt}"
    quotas = Quotas(publishes_per_hour=1)
    app = create_app(data, quotas=quotas)
    live = start_registry(data, app)
    reg = app.state.registry
    other = SQLiteStore(data / "registry.db")  # a second instance's store of the same database
    try:
        shared = build_archive(read_dir(make_skill(tmp_path / f"src{attempt}", "notes")))
        first = build_archive(read_dir(make_skill(tmp_path / f"o{attempt}", "other")))
        sha = hashlib.sha256(shared).hexdigest()
        blob = data / "blobs" / sha[:2] / sha
        token = live.token("a")
        lock = sqlite3.connect(data / "registry.db", isolation_level=None)
        lock.execute("BEGIN IMMEDIATE")
        answer: list[httpx.Response] = []
        thread = threading.Thread(
            target=lambda: answer.append(
                httpx.put(
                    f"{live.url}/v1/skills/a/notes/versions/1.0.0",
                    content=shared,
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=60,
                )
            )
        )
        thread.start()
        deadline = time.monotonic() + 30
        while not blob.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert blob.exists(), "a/notes' publish never stored its archive"
        time.sleep(0.5)  # it waits for the write lock, between retries
        reg.blobs.put(shared)  # b/notes' publish stores the same bytes first
        lock.execute("COMMIT")
        lock.close()
        try:
            other.add_version(build_release("a/other", "1.0.0", first, reg.signer), quotas)
        except RateLimited:
            pass  # the waiting publish took the lock first: this attempt shows nothing
        thread.join(60)
        other.add_version(build_release("b/notes", "1.0.0", shared, reg.signer), quotas)
        got = httpx.get(f"{live.url}/v1/skills/b/notes/versions/1.0.0/archive", timeout=30)
        return answer[0], got.content if got.status_code == 200 else b"", sha
    finally:
        live.stop()


def test_a_publish_refused_for_quota_leaves_the_archive_another_namespace_names(
    tmp_path: Path,
) -> None:
    for attempt in range(
        3
    ):  # the test takes the lock back before the waiting publish, nearly always
        refused, served, sha = _refused_then_named(tmp_path, attempt)
        if refused.status_code == 429:
            break
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["code"] == "rate_limited"
    assert hashlib.sha256(served).hexdigest() == sha  # before: a 404, the archive deleted
