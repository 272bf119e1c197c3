"""Registry answers with a ``Content-Encoding``, from a proxy on 127.0.0.1 in front of a real
registry, against `kiln skills install`.

The client asks for uncompressed answers and reads the bytes as sent. Before, httpx inflated
whatever encoding the server named: ``gzip, gzip`` on a few kilobytes inflated each chunk
in one call, to a gigabyte and more, before the 16 MB cap saw a byte; and even one honest
``gzip`` (a proxy compressing JSON) was inflated twice and ended in "internal error:
DecodingError". An archive whose object carries ``Content-Encoding: gzip`` (a bucket upload with
that header) failed its sha256, as the inflated tar was hashed instead of the signed bytes.
"""

from __future__ import annotations

import functools
import gzip
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from skills_registry.archive import build_archive, read_dir
from tests.registry.conftest import (
    LiveRegistry,
    cli_env,
    make_skill,
    start_registry,
    tree_snapshot,
)

# The CLI under a 512 MB address-space limit (a normal install needs under 300 MB): a bomb that
# inflates past it is a MemoryError, observed without taking the machine's memory.
LIMITED = (
    "import resource, runpy, sys; "
    "resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20)); "
    "sys.argv = ['kiln', *sys.argv[1:]]; "
    "runpy.run_module('lsp_server', run_name='__main__')"
)


@functools.cache
def nested_bomb() -> bytes:
    """About 12 KB that ``gzip, gzip`` inflates to 1 GB of zeros."""
    inner = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"\0" * (1 << 20)
    layer = b"".join(inner.compress(chunk) for _ in range(1024)) + inner.flush()
    return gzip.compress(layer, 9)


class Proxy:
    """Forwards to ``upstream``; ``encode`` maps a path suffix to how that answer is sent."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.encode: dict[str, str] = {}
        self.app = Starlette(routes=[Route("/{path:path}", self.answer)])

    async def answer(self, request: Request) -> Response:
        path = request.url.path
        async with httpx.AsyncClient() as http:
            upstream = await http.get(self.upstream + path, params=request.query_params)
        body, headers = upstream.content, {}
        for suffix, how in self.encode.items():
            if path.endswith(suffix):
                headers["Content-Encoding"] = "gzip" if how == "archive-object" else how
                if how == "gzip":
                    body = gzip.compress(body)
                elif how == "gzip, gzip":
                    body = nested_bomb()
        media = upstream.headers.get("content-type")
        return Response(body, upstream.status_code, headers=headers, media_type=media)


@pytest.fixture
def proxy(registry: LiveRegistry, tmp_path: Path) -> Iterator[tuple[Proxy, LiveRegistry]]:
    folder = make_skill(tmp_path / "src", "helper", description="Formats release notes.")
    response = httpx.put(
        f"{registry.url}/v1/skills/acme/helper/versions/1.0.0",
        content=build_archive(read_dir(folder)),
        headers={"Authorization": f"Bearer {registry.token('acme')}"},
    )
    assert response.status_code == 201, response.text
    server = Proxy(registry.url)
    live = start_registry(tmp_path / "unused", app=server.app)
    try:
        yield server, live
    finally:
        live.stop()


def _install(url: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    project = tmp_path / "project"
    project.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", LIMITED, "skills", "install", "acme/helper",
         "--registry", url, "--yes"],
        env=cli_env(tmp_path / "home"), cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done, project


@pytest.mark.parametrize(
    ("suffix", "how"),
    [
        ("/kiln-registry.json", "gzip"),  # a proxy compressing JSON
        ("/metadata", "gzip, gzip"),  # 12 KB that inflate to 1 GB
        ("/versions/1.0.0", "gzip, gzip"),
    ],
)
def test_an_encoded_answer_is_one_line_and_nothing_is_inflated(
    proxy: tuple[Proxy, LiveRegistry], tmp_path: Path, suffix: str, how: str
) -> None:
    server, live = proxy
    server.encode[suffix] = how
    done, project = _install(live.url, tmp_path)
    assert done.returncode == 5, (done.returncode, done.stderr)
    assert f"with Content-Encoding '{how}'" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "internal error" not in done.stderr
    assert tree_snapshot(project) == {}  # no skill, no temp folder, no lockfile


def test_an_archive_served_with_content_encoding_is_hashed_as_sent(
    proxy: tuple[Proxy, LiveRegistry], tmp_path: Path
) -> None:
    """A bucket object uploaded with ``Content-Encoding: gzip`` is served with it whatever the
    client asks: the bytes are still the signed archive, and they install."""
    server, live = proxy
    server.encode["/archive"] = "archive-object"
    done, project = _install(live.url, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (project / ".kiln/skills/helper/SKILL.md").is_file()
