"""Real backing servers for the registry tests and bench: a PostgreSQL cluster and an S3 server.

PostgreSQL is the Debian server binaries (``/usr/lib/postgresql/<v>/bin``) running a throwaway
cluster in a temp folder. PostgreSQL refuses to run as root and CI runs as root, so under root
the cluster belongs to ``nobody`` and the server runs as that user. S3 is moto's standalone
server (``python -m moto.server``), a real HTTP S3 endpoint that boto3 talks to as to AWS.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if found:
        return Path(found[-1]).parent
    which = shutil.which("postgres") or shutil.which("initdb")
    if which:
        return Path(which).parent
    raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql)")


def _wait(check: Any, what: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            if check():
                return
        except Exception:  # noqa: BLE001, S110 - not up yet
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start within {timeout}s")
        time.sleep(0.05)


@dataclass
class Postgres:
    root: Path
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def admin_url(self) -> str:
        return f"postgresql://kiln@127.0.0.1:{self.port}/postgres"

    def url(self, db: str) -> str:
        return f"postgresql://kiln@127.0.0.1:{self.port}/{db}"

    def new_database(self, prefix: str = "t") -> str:
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def start_postgres(max_connections: int = 200) -> Postgres:
    """initdb + postgres in a fresh temp folder, trust auth on 127.0.0.1, durability off."""
    binaries = pg_bin()
    root = Path(tempfile.mkdtemp(prefix="kiln-pg-"))
    as_root = os.geteuid() == 0
    user: dict[str, Any] = {"user": "nobody"} if as_root else {}
    if as_root:
        os.chmod(root, 0o755)
        shutil.chown(root, "nobody")
    data = root / "data"
    subprocess.run(
        [
            str(binaries / "initdb"),
            "-D",
            str(data),
            "-U",
            "kiln",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
        cwd=root,
        **user,
    )
    port = _free_port()
    proc = subprocess.Popen(
        [
            str(binaries / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-k",
            str(root),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            f"max_connections={max_connections}",
            "-c",
            "shared_buffers=128MB",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(root / "server.log", "wb"),  # noqa: SIM115 - the server owns it
        cwd=root,
        **user,
    )
    pg = Postgres(root, port, proc)

    def ready() -> bool:
        import psycopg

        with psycopg.connect(pg.admin_url, connect_timeout=2):
            return True

    _wait(ready, "postgres", proc)
    return pg


@dataclass
class S3Server:
    endpoint: str
    proc: subprocess.Popen[bytes]

    def env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "kiln-test",
            "AWS_SECRET_ACCESS_KEY": "kiln-test-secret",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def new_bucket(self, prefix: str = "kiln") -> str:
        import boto3

        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        env = self.env()
        boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=env["AWS_REGION"],
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        ).create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_s3() -> S3Server:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = S3Server(f"http://127.0.0.1:{port}", proc)
    _wait(
        lambda: httpx.get(server.endpoint + "/moto-api/", timeout=2).status_code < 500, "moto", proc
    )
    return server
