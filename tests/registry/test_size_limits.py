"""A skill exactly at the documented 32 MB unpacked limit, published over real HTTP.

Before: the 32 MB cap also applied to the decompressed tar stream, whose headers, long-name
(PAX) records and padding add up to a few MB over 1,000 files, so a skill whose files came to
32 MB less a few KB was refused as `archive expands past 33554432 bytes (decompression
bomb?)`. The files' own bytes are what the limit counts; the stream allows the tar overhead
of the most entries an archive may have, and one byte more of files is still refused.
"""

from __future__ import annotations

import gzip
import io
import json
import socket
import tarfile

import httpx
import pytest

from skills_registry.archive import MAX_FILE_BYTES, MAX_FILES, MAX_UNPACKED_BYTES, read_archive
from skills_registry.registry.errors import ArchiveError
from tests.registry.conftest import LiveRegistry

SKILL_MD = b"---\nname: big\ndescription: A skill at the size limit.\n---\nbody\n"
DEEP = "/".join(f"folder-{i:02d}-" + "x" * 40 for i in range(4))  # 200+ chars: PAX headers


def _sized(total: int) -> bytes:
    """1,000 files (most under long names in deep folders) whose bytes add up to ``total``."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(f"big/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        add("SKILL.md", SKILL_MD)
        small = MAX_FILES - 5
        rest = total - len(SKILL_MD) - small
        for i in range(4):
            size = min(rest, MAX_FILE_BYTES)
            add(f"data/blob-{i}.bin", b"\0" * size)
            rest -= size
        assert rest == 0
        for i in range(small):
            add(f"{DEEP}/f{i:04d}-" + "n" * 60 + ".txt", b"x")
    return gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)


def test_a_skill_of_exactly_32_mb_is_read_and_one_byte_more_is_not() -> None:
    contents = read_archive(_sized(MAX_UNPACKED_BYTES))
    assert contents.size == MAX_UNPACKED_BYTES and len(contents.files) == MAX_FILES
    with pytest.raises(ArchiveError) as info:
        read_archive(_sized(MAX_UNPACKED_BYTES + 1))
    assert f"more than {MAX_UNPACKED_BYTES} bytes" in str(info.value)


@pytest.mark.parametrize(
    ("total", "expect"),
    [(MAX_UNPACKED_BYTES, 201), (MAX_UNPACKED_BYTES + 1, 422)],
    ids=["at-limit", "one-over"],
)
def test_publishing_at_the_limit_over_http(live: LiveRegistry, total: int, expect: int) -> None:
    archive = _sized(total)
    response = httpx.put(
        f"{live.url}/v1/skills/acme/big/versions/1.0.0",
        content=archive,
        headers={"Authorization": f"Bearer {live.token('acme')}"},
        timeout=120,
    )
    assert response.status_code == expect, response.text[:300]
    if expect == 201:
        got = httpx.get(f"{live.url}/v1/skills/acme/big/versions/1.0.0/archive", timeout=60)
        assert got.content == archive


def test_a_declared_10_gb_upload_is_refused_by_the_archive_limit(live: LiveRegistry) -> None:
    """A `Content-Length` of 10 GB was measured against the namespace's quota first: the 413
    said the namespace's bytes would pass its quota and to "ask the registry's operator to
    raise it", though no quota lets an archive over 8 MB in. Nothing of the body is sent."""
    port = int(live.url.rsplit(":", 1)[1])
    head = (
        "PUT /v1/skills/acme/big/versions/1.0.0 HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {live.token('acme')}\r\nContent-Length: {10 << 30}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status, _, body = answer.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 413"), answer[:300]
    error = json.loads(body)["error"]
    assert error["code"] == "too_large" and f"the limit is {8 << 20}" in error["message"]
