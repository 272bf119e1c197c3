"""`/metrics` labels an attacker cannot multiply, against a real registry on 127.0.0.1.

The request histogram is labelled by method, and HTTP lets a client send any token as its
method. Before, each made-up method (`M00001`, `M00002`…) added a label set of ~15 buckets
that the server keeps for ever and serves at `/metrics`: 300 requests, no token, grew it from
48 KB to 566 KB, a memory leak on demand. Methods outside HTTP's own are now counted as `other`.
"""

from __future__ import annotations

import re

import httpx

from tests.registry.conftest import LiveRegistry


def _methods(text: str) -> set[str]:
    return set(re.findall(r'kiln_registry_request_seconds_count\{method="([^"]*)"', text))


def test_made_up_methods_do_not_grow_the_metrics(registry: LiveRegistry) -> None:
    with httpx.Client(base_url=registry.url) as client:
        assert client.get("/v1/skills").status_code == 200
        for i in range(200):
            assert client.request(f"M{i:05d}", "/v1/skills").status_code == 405
        text = client.get("/metrics").text
    assert "M00001" not in text
    assert _methods(text) <= {"GET", "other"}, _methods(text)
    assert re.search(r'kiln_registry_request_seconds_count\{method="other"[^}]*\} 200\.0', text)
