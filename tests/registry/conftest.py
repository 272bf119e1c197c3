"""Fixtures for the marketplace tests: a real registry on a loopback port, real skill folders.

The server runs uvicorn in a thread over a socket bound to port 0 (no port guessing); the CLI
tests start `kiln registry serve` as a subprocess instead, and check each `kiln` command with
``ok`` (it succeeded) or ``fails`` (refused in one line). ``backend_registry`` runs the same
app over each backend pair: SQLite + a folder, and PostgreSQL + S3 (a real PostgreSQL cluster
and moto's S3 server, started once per session; see ``servers.py``).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from skills_registry.archive import build_archive, read_dir
from skills_registry.client import RegistryClient
from skills_registry.registry.app import create_app
from tests.registry.servers import Postgres, S3Server, start_postgres, start_s3

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "skills" / "anthropic"


@dataclass
class LiveRegistry:
    url: str
    data: Path
    app: object
    server: uvicorn.Server
    thread: threading.Thread

    def token(self, namespace: str) -> str:
        return self.app.state.registry.store.create_token(namespace)  # type: ignore[attr-defined]

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_registry(data: Path, app: Any = None) -> LiveRegistry:
    app = app if app is not None else create_app(data)
    sock = socket.socket(
        socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP
    )  # Nagle off, see cli/registry.py
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="error", lifespan="off", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # generous: a loaded machine starts slowly
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("registry did not start")
        time.sleep(0.01)
    return LiveRegistry(f"http://127.0.0.1:{port}", data, app, server, thread)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveRegistry]:
    """A registry server (SQLite and a folder) in a thread on a loopback port."""
    registry = start_registry(tmp_path / "registry-data")
    try:
        yield registry
    finally:
        registry.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    server = start_s3()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The S3 server with the standard AWS variables pointing at it for this test."""
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    return s3_server


BACKENDS = ["sqlite+folder", "postgresql+s3"]


def backend_urls(
    kind: str, data: Path, request: pytest.FixtureRequest
) -> tuple[str | None, str | None]:
    """Fresh ``(db, blobs)`` URLs for one backend pair (None: the defaults under ``data``)."""
    if kind == "sqlite+folder":
        return None, None
    pg: Postgres = request.getfixturevalue("postgres")
    server: S3Server = request.getfixturevalue("s3")
    return pg.new_database(), f"s3://{server.new_bucket()}/skills"


@pytest.fixture(params=BACKENDS)
def backend_registry(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LiveRegistry]:
    """A live registry over each backend pair in turn."""
    db, blobs = backend_urls(request.param, tmp_path / "registry-data", request)
    app = create_app(tmp_path / "registry-data", db=db, blobs=blobs)
    live = start_registry(tmp_path / "registry-data", app)
    try:
        yield live
    finally:
        live.stop()
        close = getattr(app.state.registry.store, "close", None)
        if close is not None:
            close()


@pytest.fixture(params=["sqlite", "postgresql"])
def metadata_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Each MetadataStore implementation in turn, empty."""
    from skills_registry.registry.backends import open_metadata

    if request.param == "sqlite":
        url = f"sqlite://{tmp_path / 'registry.db'}"
    else:
        url = request.getfixturevalue("postgres").new_database()
    store = open_metadata(url)
    try:
        yield store
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()


def blob_names(live: LiveRegistry) -> set[str]:
    """Every archive the registry's blob store holds, whatever the store."""
    blobs = live.app.state.registry.blobs  # type: ignore[attr-defined]
    return set(blobs.unreferenced_candidates(older_than=-3600))


def make_skill(
    root: Path,
    name: str,
    description: str = "A test skill.",
    body: str = "# Test\n",
    extra: dict[str, str] | None = None,
    front: str = "",
) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{front}---\n{body}", encoding="utf-8"
    )
    for rel, text in (extra or {}).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (and its parent's siblings are checked by the caller)."""
    if not root.exists():
        return {}
    return {
        p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else b"<dir>")
        for p in sorted(root.rglob("*"))
    }


def kiln(
    *args: str, env: dict[str, str], cwd: Path, input: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        env=env,
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env.update({"KILN_HOME": str(home), **extra})
    return env


def ok(result: subprocess.CompletedProcess[str]) -> str:
    """The output of a `kiln` command that must succeed (its stderr shown if it did not)."""
    assert result.returncode == 0, result.stderr
    return result.stdout


def fails(result: subprocess.CompletedProcess[str], code: int, words: str) -> None:
    """A `kiln` command refused with exit ``code``: ``words`` said, one `kiln:` line last, no
    traceback."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert words in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("kiln: ")


@contextmanager
def serving(data: Path, home: Path, *extra: str) -> Iterator[int]:
    """`kiln registry serve` as a real process on a free loopback port (its port yielded);
    stopped after, and its log must hold no traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "registry", "serve", "--port", "0",
         "--data", str(data), *extra],
        env=cli_env(home),
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    assert match, line + proc.stderr.read()
    logged: list[str] = []
    threading.Thread(target=lambda: logged.extend(proc.stderr), daemon=True).start()
    try:
        yield int(match.group(1))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # stuck (a test that failed on a hung server): end it
            proc.kill()
            proc.wait(timeout=10)
            raise
        assert not any("Traceback" in entry for entry in logged), "".join(logged)


def publish_skill(
    reg: LiveRegistry, folder: Path, version: str, namespace: str = "acme"
) -> dict[str, Any]:
    """Publish ``folder`` to the live registry as ``namespace/<folder name>@version``."""
    with RegistryClient(reg.url, reg.token(namespace)) as client:
        return client.publish(
            f"{namespace}/{folder.name}", version, build_archive(read_dir(folder))
        )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project folder to install into."""
    root = tmp_path / "project"
    root.mkdir()
    return root
