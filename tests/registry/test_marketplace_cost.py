"""The served marketplace must not unpack every archive on every anonymous request.

`/.claude-plugin/marketplace.json` lists each skill's latest release with the sha of its git
commit. Before, the commit was rebuilt through a cache of 16 repositories, so with more skills
than that every request, no token needed, read and unpacked every skill's archive (minutes of
a worker thread at a large registry's size, and 40 such requests fill the thread pool that
publishes run in). A real registry on 127.0.0.1 over a blob store that counts its reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from skills_registry.registry.app import create_app_with
from skills_registry.registry.backends import load_signer, open_backends
from tests.registry.conftest import make_skill, publish_skill, start_registry

NAMES = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
]


class CountingBlobs:
    """The real blob store, counting archive reads."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.reads = inner, 0

    def get(self, sha256: str) -> bytes:
        self.reads += 1
        return self.inner.get(sha256)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_marketplace_requests_do_not_reread_every_archive(tmp_path: Path) -> None:
    data = tmp_path / "registry-data"
    backends = open_backends(data)
    blobs = CountingBlobs(backends.blobs)
    live = start_registry(data, app=create_app_with(backends.store, blobs, load_signer(data)))
    try:
        for name in NAMES:  # more than the 16 repositories kept
            publish_skill(live, make_skill(tmp_path / "src", name), "1.0.0")
        url = f"{live.url}/.claude-plugin/marketplace.json"
        first = httpx.get(url)
        assert first.status_code == 200 and len(first.json()["plugins"]) == 20
        reads = blobs.reads
        for _ in range(3):
            again = httpx.get(url)
            assert again.json() == first.json()
        assert blobs.reads == reads, blobs.reads - reads  # before: 20 reads per request
        clone = httpx.get(f"{live.url}/git/acme/alpha.git/info/refs?service=git-upload-pack")
        assert clone.status_code == 200  # the git repositories are served as before
    finally:
        live.stop()
