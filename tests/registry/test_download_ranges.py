"""`Range` on archive downloads as HTTP defines it, on each backend pair over real HTTP.

Before: on the folder store a `Range` header starlette could not use was a plain-text 400
(`items=0-5`, `bytes=100-50`, `bytes=abc`), although RFC 9110 says a server MUST ignore a range
unit it does not understand (and may ignore any invalid range); an unsatisfiable range was an
empty text/plain 416; and the object-storage path answered the same headers differently (416
for a malformed one). Now both serve the whole archive for a header they ignore, 206 for one
satisfiable range, and a JSON 416 with `Content-Range: bytes */SIZE` past the end.
"""

from __future__ import annotations

import httpx
import pytest

from tests.registry.conftest import FIXTURES, LiveRegistry, publish_skill

IGNORED = ["items=0-5", "bytes=100-50", "bytes=abc", "bytes=0-0,5-6", "bytes=-", "bytes 0-5"]


@pytest.fixture
def archive(backend_registry: LiveRegistry) -> tuple[str, bytes]:
    publish_skill(backend_registry, FIXTURES / "internal-comms", "1.0.0")
    url = f"{backend_registry.url}/v1/skills/acme/internal-comms/versions/1.0.0/archive"
    whole = httpx.get(url)
    assert whole.status_code == 200
    return url, whole.content


def test_ranges_are_served_ignored_or_refused_as_http_says(archive: tuple[str, bytes]) -> None:
    url, whole = archive
    size = len(whole)
    for header in IGNORED:
        response = httpx.get(url, headers={"Range": header})
        assert response.status_code == 200, (header, response.status_code, response.text[:80])
        assert response.content == whole, header
    for header, part in [
        ("bytes=0-9", whole[:10]),
        ("BYTES=0-9", whole[:10]),
        ("bytes=-5", whole[-5:]),
        (f"bytes={size - 3}-", whole[-3:]),
        ("bytes=0-99999999999999999999999", whole),
    ]:
        response = httpx.get(url, headers={"Range": header})
        assert response.status_code == 206, (header, response.text[:80])
        assert response.content == part, header
        assert response.headers["content-range"].endswith(f"/{size}"), header
    for header in [f"bytes={size}-", "bytes=99999999-", "bytes=-0"]:
        response = httpx.get(url, headers={"Range": header})
        assert response.status_code == 416, (header, response.status_code)
        assert response.headers["content-range"] == f"bytes */{size}", header
        assert response.json()["error"]["code"] == "range_not_satisfiable", header


def test_a_suffix_longer_than_the_archive_is_the_whole_archive(archive: tuple[str, bytes]) -> None:
    """RFC 9110: a suffix range longer than the representation selects all of it. Before: on
    the folder store starlette computed a negative start and answered a plain-text 416."""
    url, whole = archive
    size = len(whole)
    for header in [f"bytes=-{size}", f"bytes=-{size + 1}", "bytes=-99999999"]:
        response = httpx.get(url, headers={"Range": header})
        assert response.status_code == 206, (header, response.status_code, response.text[:80])
        assert response.content == whole, header
        assert response.headers["content-range"] == f"bytes 0-{size - 1}/{size}", header


def test_bounds_of_thousands_of_digits_are_read_not_a_500(archive: tuple[str, bytes]) -> None:
    """A header block may hold 16 KB, so a bound of 5,000 digits reaches the server: Python
    reads no integer past 4,300 digits, so before, `bytes=0-999…` and its kin were a 500 with a
    traceback. A huge end or suffix means the whole archive, a huge start is past the end, and
    leading zeros are zeros."""
    url, whole = archive
    size = len(whole)
    huge = "9" * 5000
    for header, part in [
        (f"bytes=0-{huge}", whole),
        (f"bytes=-{huge}", whole),
        (f"bytes={'0' * 5000}2-{'0' * 5000}4", whole[2:5]),
    ]:
        response = httpx.get(url, headers={"Range": header})
        assert response.status_code == 206, (header[:20], response.status_code, response.text[:80])
        assert response.content == part, header[:20]
        assert response.headers["content-range"].endswith(f"/{size}"), header[:20]
    response = httpx.get(url, headers={"Range": f"bytes={huge}-"})
    assert response.status_code == 416, response.text[:80]
    assert response.json()["error"]["code"] == "range_not_satisfiable"
