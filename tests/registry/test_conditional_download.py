"""`If-None-Match` on archive downloads as HTTP defines it, against a real registry.

Before, only a header equal to the ETag alone was a 304: a list of tags (what caches send),
a weak tag or `*` downloaded the whole archive again.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.registry.conftest import LiveRegistry, make_skill, publish_skill


@pytest.mark.parametrize(
    ("header", "status"),
    [("{etag}", 304), ('"other", {etag}', 304), ("W/{etag}", 304), ("*", 304), ('"other"', 200)],
)
def test_if_none_match(registry: LiveRegistry, tmp_path: Path, header: str, status: int) -> None:
    publish_skill(registry, make_skill(tmp_path, "notes"), "1.0.0")
    url = f"{registry.url}/v1/skills/acme/notes/versions/1.0.0/archive"
    etag = httpx.get(url).headers["etag"]
    answer = httpx.get(url, headers={"If-None-Match": header.format(etag=etag)})
    assert answer.status_code == status
    assert (answer.content == b"") == (status == 304)
