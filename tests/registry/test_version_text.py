"""Version strings at the edges: non-ASCII digits, and ordering many versions.

Before: the SemVer pattern's `\\d` matched any Unicode digit, so `1١.0.0` (an Arabic-Indic one)
passed as a version that node-semver read as 11.0.0: its publish was stored, became `latest`,
and then failed on the `Location` header as a plain-text 500. And versions were sorted with
node-semver's compare, which parses both strings again on every comparison: a skill's signed
metadata took ~250 ms to build at 1,000 versions, on the event loop (see
bench/registry_pages.py); the sort key is now a tuple with the same order.
"""

from __future__ import annotations

import random
import socket
from functools import cmp_to_key
from pathlib import Path

import httpx
import nodesemver
import pytest

from skills_registry.archive import build_archive, read_dir
from skills_registry.registry.errors import UsageError
from skills_registry.registry.semver import Range, Version
from tests.registry.conftest import LiveRegistry, make_skill

LOOKALIKES = ["1\u0661.0.0", "1.0.\u0661", "1.0.0-rc.\u0661", "\uff11.0.0", "1.0.0-\u0661a"]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_versions_with_non_ascii_digits_are_refused(text: str) -> None:
    with pytest.raises(UsageError):
        Version.parse(text)


def test_publishing_a_non_ascii_version_is_a_422_that_stores_nothing(
    live: LiveRegistry, tmp_path: Path
) -> None:
    archive = build_archive(read_dir(make_skill(tmp_path, "notes")))
    headers = {"Authorization": f"Bearer {live.token('acme')}"}
    base = f"{live.url}/v1/skills/acme/notes"
    assert httpx.put(f"{base}/versions/1.0.0", content=archive, headers=headers).status_code == 201
    response = httpx.put(f"{base}/versions/1\u0661.0.0", content=archive, headers=headers)
    assert response.status_code == 422, response.text
    assert "invalid version" in response.json()["error"]["message"]
    detail = httpx.get(base).json()
    assert detail["distTags"] == {"latest": "1.0.0"}
    assert [v["version"] for v in detail["versions"]] == ["1.0.0"]


@pytest.mark.parametrize(
    "text", ["1.0.0%20", "%201.0.0", "1.0.0%09", "1.0.0%0A", "1.0.0-" + "a" * 130]
)
def test_a_version_with_spaces_or_over_128_characters_is_a_422_that_stores_nothing(
    live: LiveRegistry, tmp_path: Path, text: str
) -> None:
    """Before, `1.0.0 ` (a trailing space) passed the check, which stripped it first: the
    version was stored as typed, became `latest`, and the publisher's connection was dropped
    (the `Location` header could not hold the space). `1.0.0` itself then got a 409 for ever,
    and every client refused the signed `1.0.0 ` as a file name: a skill nobody could install."""
    archive = build_archive(read_dir(make_skill(tmp_path, "notes")))
    headers = {"Authorization": f"Bearer {live.token('acme')}"}
    base = f"{live.url}/v1/skills/acme/notes"
    response = httpx.put(f"{base}/versions/{text}", content=archive, headers=headers)
    assert response.status_code == 422, response.text
    assert "invalid version" in response.json()["error"]["message"]
    assert httpx.get(base).status_code == 404  # nothing stored
    assert httpx.put(f"{base}/versions/1.0.0", content=archive, headers=headers).status_code == 201
    assert httpx.get(f"{base}/metadata").json()["signed"]["distTags"] == {"latest": "1.0.0"}
    # Once 1.0.0 exists, the same text is still a 422 naming the version (it was a 409 that
    # called `1.0.0 ` a build-metadata twin of 1.0.0).
    again = httpx.put(f"{base}/versions/{text}", content=archive, headers=headers)
    assert again.status_code == 422, again.text
    assert "invalid version" in again.json()["error"]["message"]


def _corpus() -> list[str]:
    rng = random.Random(3)
    words = ["alpha", "beta", "rc", "a-b", "-", "0", "1", "2", "10", "11", "x1", "1x", "zz"]
    out = {"1.0.0", "1.0.0-0", "0.0.0", "1.0.0-alpha.beta.1", "1.0.0-alpha.beta"}
    while len(out) < 400:
        core = ".".join(str(rng.choice([0, 1, 2, 9, 10, 11, 100])) for _ in range(3))
        pre = [rng.choice(words) for _ in range(rng.choice([0, 0, 1, 2, 3]))]
        out.add(core + ("-" + ".".join(pre) if pre else ""))
    return sorted(out)


def test_the_sort_key_orders_versions_as_node_semver_does() -> None:
    corpus = _corpus()
    expected = sorted(corpus, key=cmp_to_key(lambda a, b: nodesemver.compare(a, b, False)))
    assert sorted(corpus, key=lambda v: Version.parse(v).key()) == expected
    for a, b in zip(expected, expected[1:], strict=False):
        assert (Version.parse(a).key() == Version.parse(b).key()) == (
            nodesemver.compare(a, b, False) == 0
        )


@pytest.mark.parametrize(
    "spec", ["^1.0.0", "~1.2.0", ">=1.2 <2", "1.x", "0.1 || 1.2", "*", "^2.0.0-rc"]
)
def test_a_range_matches_as_node_semver_does(spec: str) -> None:
    """Ranges are parsed once and reused (node-semver's `satisfies` parsed the range again for
    every version, ~140 ms to resolve among 1,000 versions); the answers are the same."""
    for text in _corpus():
        expected = nodesemver.satisfies(Version.parse(text).core(), spec, loose=False)
        assert Range.parse(spec).matches(Version.parse(text)) == expected, (spec, text)


@pytest.mark.parametrize("text", ["1.0.0-", "01.0.0", "1.0.0%0A", "9" * 200 + ".0.0"])
def test_a_malformed_version_is_refused_before_the_body_is_read(
    live: LiveRegistry, text: str
) -> None:
    """docs/registry.md: "the token and the version are checked before the body is read". A
    malformed version was listed with the archive's problems, so the server first waited for
    the whole upload (up to 8 MB); here none is sent, and the 422 must come at once."""
    port = int(live.url.rsplit(":", 1)[1])
    request = (
        f"PUT /v1/skills/acme/notes/versions/{text} HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {live.token('acme')}\r\nConnection: close\r\n"
        "Content-Type: application/gzip\r\nContent-Length: 5000000\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(request)  # and no body: a server waiting for it times this out
        answer = b""
        while chunk := sock.recv(65536):  # the server closes after its answer
            answer += chunk
    text_answer = answer.decode("latin-1")
    assert text_answer.startswith("HTTP/1.1 422"), text_answer
    assert "invalid version" in text_answer and len(text_answer) < 2000
