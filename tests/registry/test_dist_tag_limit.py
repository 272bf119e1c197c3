"""A hostile publisher making dist-tags without end, on each backend pair over real HTTP.

Before: a dist-tag costs its publisher one small request (about 600 a second here) and each is
listed in every read of the skill's signed metadata, so 20,000 of them made each anonymous read
of it 0.9 MB and 86 ms of the server's event loop, and ~400,000 a document larger than any
client reads (16 MB). Now a skill holds at most 100 (`latest` included): a new one past that is
a 409 naming the limit, while moving an existing one, or adding one after a removal, works.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from skills_registry.registry.store_rules import MAX_DIST_TAGS
from tests.registry.conftest import LiveRegistry, make_skill, publish_skill


def test_a_skill_holds_at_most_its_dist_tag_limit(
    backend_registry: LiveRegistry, tmp_path: Path
) -> None:
    folder = make_skill(tmp_path, "tags")
    publish_skill(backend_registry, folder, "1.0.0", namespace="evil")
    publish_skill(backend_registry, folder, "1.1.0", namespace="evil")
    base = f"{backend_registry.url}/v1/skills/evil/tags"
    with httpx.Client(headers={"Authorization": f"Bearer {backend_registry.token('evil')}"}) as c:
        for i in range(MAX_DIST_TAGS - 1):  # with `latest`, the limit
            assert c.put(f"{base}/dist-tags/t{i}", json={"version": "1.0.0"}).is_success
        refused = c.put(f"{base}/dist-tags/one-more", json={"version": "1.0.0"})
        assert refused.status_code == 409, refused.text
        assert f"the limit is {MAX_DIST_TAGS}" in refused.json()["error"]["message"]
        assert c.put(f"{base}/dist-tags/t0", json={"version": "1.1.0"}).is_success  # moved
        assert c.put(f"{base}/dist-tags/latest", json={"version": "1.0.0"}).is_success
        assert c.delete(f"{base}/dist-tags/t1").is_success
        assert c.put(f"{base}/dist-tags/one-more", json={"version": "1.0.0"}).is_success
    tags = httpx.get(f"{base}/metadata").json()["signed"]["distTags"]
    assert len(tags) == MAX_DIST_TAGS and tags["t0"] == "1.1.0" and "t1" not in tags
