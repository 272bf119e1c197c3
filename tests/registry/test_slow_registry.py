"""A registry that answers slowly on purpose, against the real client: every request (connect,
headers and body) ends within the client's deadline however the bytes dribble in; each wait
between bytes is bounded only by the read timeout, so without the deadline a byte every few
seconds would hold an install for as long as the registry likes. Real servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from skills_registry.client import RegistryClient
from skills_registry.registry.errors import IntegrityError
from tests.registry.conftest import start_registry


@pytest.fixture
def dribbler() -> Iterator[str]:
    """A server that sends a status line, then header bytes one at a time, 50 ms apart, and
    never ends the headers: it hangs up after 20 s (so that a client without a deadline fails
    the test) or when the client does; yields its URL."""
    server = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                for _ in range(400):
                    if done.wait(0.05):
                        break
                    conn.sendall(b"a")
            except OSError:
                return  # the client hung up

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        done.set()
        server.close()
        thread.join(timeout=30)


def test_headers_that_dribble_in_are_cut_off_at_the_deadline(dribbler: str) -> None:
    """Each byte comes well within the read timeout; the request's deadline ends it."""
    client = RegistryClient(dribbler, timeout=30, deadline=1.0)
    with client, pytest.raises(IntegrityError, match="did not finish sending .* within 1s"):
        client.info()


def test_a_registry_that_trickles_is_cut_off(tmp_path: Path) -> None:
    """One byte every 50 ms never trips a read timeout; the body's deadline ends it."""

    async def trickle(request: Request) -> Response:
        async def drip() -> Iterator[bytes]:  # type: ignore[misc]
            for _ in range(400):  # 20 s, so that a client without a deadline fails the test
                yield b" "
                await asyncio.sleep(0.05)

        return StreamingResponse(drip(), media_type="application/json")  # type: ignore[arg-type]

    live = start_registry(tmp_path / "slow", app=Starlette(routes=[Route("/{p:path}", trickle)]))
    try:
        client = RegistryClient(live.url, deadline=1.0)
        with client, pytest.raises(IntegrityError, match="did not finish sending .* within 1s"):
            client.info()
    finally:
        live.stop()


def test_a_download_redirected_hop_after_hop_ends_at_one_deadline(tmp_path: Path) -> None:
    """Each hop of a redirected download answers within the deadline (0.4 s of 1 s), but four
    hops take 1.6 s: the deadline covers the download and its redirects together."""

    async def hop(request: Request) -> Response:
        await asyncio.sleep(0.4)
        path = request.url.path
        if path.endswith("/archive"):
            return Response(status_code=302, headers={"location": "/hop/1"})
        n = int(path.rsplit("/", 1)[-1])
        if n < 3:
            return Response(status_code=302, headers={"location": f"/hop/{n + 1}"})
        return Response(b"archive bytes", media_type="application/gzip")

    live = start_registry(tmp_path / "hops", app=Starlette(routes=[Route("/{p:path}", hop)]))
    try:
        with RegistryClient(live.url, deadline=60.0) as patient:  # the same hops, time to spare
            assert patient.download("acme/hops", "1.0.0") == b"archive bytes"
        client = RegistryClient(live.url, deadline=1.0)
        with client, pytest.raises(IntegrityError, match="did not finish sending .* within 1s"):
            client.download("acme/hops", "1.0.0")
    finally:
        live.stop()
