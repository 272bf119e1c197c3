"""Requests HTTP itself refuses, sent raw to `kiln registry serve` on 127.0.0.1.

Before: a request h11 could not parse (a garbage request line, a header line without a
colon, a header block over 16 KB) got uvicorn's plain-text
`Invalid HTTP request received.`, not the JSON error every other answer is; and a 405 had no
`Allow` header (RFC 9110 requires one), so a client could not tell which methods a path takes.
An error in a request's body after the app has started on it (a bad chunk size) still closes
the connection, with a JSON 400 when no response has begun.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from tests.registry.conftest import serving

NEVER = 60.0  # seconds: fires only if the server never answers


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    tmp = tmp_path_factory.mktemp("served")
    with serving(tmp / "data", tmp / "home") as port:
        yield port


def _raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` in one write and read the answer until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=NEVER) as sock:
        try:
            sock.sendall(request)
        except OSError:
            pass  # the server may answer and close before reading everything
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return status, {k.lower(): v for k, v in headers.items()}, body


MALFORMED = {
    "garbage request line": b"HELLO THERE\r\n\r\n",
    "header without a colon": b"GET /v1/skills HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
    "bad chunk size": (
        b"POST /v1/oidc/token HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"zz\r\n{}\r\n0\r\n\r\n"
    ),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_a_request_http_cannot_parse_gets_a_json_400(served: int, name: str) -> None:
    status, headers, body = _raw(served, MALFORMED[name])
    assert status == 400
    assert headers["content-type"].startswith("application/json")
    error = json.loads(body)["error"]
    assert error["code"] == "bad_request" and "\n" not in error["message"]


@pytest.mark.parametrize(
    "head",
    [
        b"".join(b"X-H%d: v\r\n" % i for i in range(20_000)),  # many headers
        b"X-Big: " + b"a" * 1_000_000 + b"\r\n",  # one huge header
        b"X-Big: " + b"a" * 20_000 + b"\r\n",  # a 20 KB block, which arrives in one read
    ],
    ids=["many-headers", "huge-header", "20-kb-in-one-read"],
)
def test_an_oversized_header_block_gets_a_json_431(served: int, head: bytes) -> None:
    status, headers, body = _raw(served, b"GET /v1/skills HTTP/1.1\r\nHost: x\r\n" + head + b"\r\n")
    assert status == 431
    assert headers["content-type"].startswith("application/json")
    assert "header" in json.loads(body)["error"]["message"]


def _answers(received: bytes) -> list[tuple[int, bytes]]:
    """The (status, body) of each response in ``received``, read by their content-length."""
    answers = []
    while received:
        head, _, rest = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        fields = dict(line.lower().split(": ", 1) for line in lines[1:])
        length = int(fields["content-length"])
        answers.append((int(lines[0].split()[1]), rest[:length]))
        received = rest[length:]
    return answers


def test_a_pipelined_request_with_an_oversized_header_block_gets_a_json_431(served: int) -> None:
    """Before, only a head that arrived while the connection was idle was measured: a 20 KB
    head pipelined behind a small request in the same write waited in the buffer and was
    served with a 200 once the first answer was done."""
    small = b"GET /v1/skills HTTP/1.1\r\nHost: x\r\n\r\n"
    big = b"GET /v1/skills HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: " + b"a" * 20_000
    big += b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", served), timeout=NEVER) as sock:
        sock.sendall(small + big)
        received = b""
        try:
            while chunk := sock.recv(65536):  # the server closes after the 431
                received += chunk
        except ConnectionResetError:
            pass
    answers = _answers(received)
    assert [status for status, _ in answers] == [200, 431]
    assert "header" in json.loads(answers[1][1])["error"]["message"]
    assert httpx.get(f"http://127.0.0.1:{served}/v1/skills").status_code == 200  # still up


def test_a_header_block_just_under_16_kb_is_served(served: int) -> None:
    """The 431 above counts the header block only: 16,000 bytes of it, or a body of 40 KB
    sent in the same write, are served as before."""
    big = b"GET /v1/skills HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: "
    assert _raw(served, big + b"a" * 16_000 + b"\r\n\r\n")[0] == 200
    body = b"x" * 40_000
    put = b"PUT /v1/skills/acme/notes/versions/1.0.0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    assert _raw(served, put + b"Content-Length: 40000\r\n\r\n" + body)[0] == 401  # no token


def test_the_server_still_answers_after_malformed_requests(served: int) -> None:
    _raw(served, MALFORMED["garbage request line"])
    assert httpx.get(f"http://127.0.0.1:{served}/v1/skills").status_code == 200


def test_a_405_names_the_allowed_methods(served: int) -> None:
    url = f"http://127.0.0.1:{served}"
    for method, path, allowed in [
        ("OPTIONS", "/v1/skills", {"GET", "HEAD"}),
        ("DELETE", "/v1/skills/acme/notes/versions/1.0.0", {"PUT", "POST", "GET", "HEAD"}),
        ("POST", "/v1/skills/acme/notes/dist-tags/beta", {"PUT", "DELETE"}),
    ]:
        response = httpx.request(method, url + path)
        assert response.status_code == 405, (method, path)
        assert response.json()["error"]["code"] == "http_error"
        got = {m.strip() for m in response.headers.get("allow", "").split(",") if m.strip()}
        assert got == allowed, (method, path, got)
