"""`kiln registry ...`: run the skills registry server and manage its publish tokens.

``serve`` binds the socket itself so ``--port 0`` works and the real address is printed
(on stderr, ``kiln registry: listening on http://HOST:PORT``) before the first request.
"""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

T = TypeVar("T")


def _default_data() -> Path:
    import os

    return Path(os.environ.get("KILN_HOME") or Path.home() / ".kiln") / "registry"


def _open(factory: Callable[[], T], data_dir: Path) -> T:
    """Open the data folder; an unusable folder is a one-line error, not a traceback."""
    try:
        return factory()
    except (OSError, sqlite3.Error) as exc:
        raise click.ClickException(f"cannot use data folder {data_dir}: {exc}") from None


@click.group(name="registry")
def registry_group() -> None:
    """Run a skills registry (the marketplace) and manage its tokens."""


@registry_group.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option(
    "--port",
    default=8750,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port (0 picks a free one).",
)
@click.option(
    "--data",
    "data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Data folder (SQLite, blobs, signing key). Default: $KILN_HOME/registry.",
)
@click.option(
    "--name", default="kiln-registry", show_default=True, help="Registry name shown to clients."
)
@click.option(
    "--log-level",
    default="warning",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)
def serve_cmd(host: str, port: int, data: Path | None, name: str, log_level: str) -> None:
    """Serve the registry API until interrupted."""
    import uvicorn

    from skills_registry.registry.app import create_app

    data_dir = data or _default_data()
    app = _open(lambda: create_app(data_dir, name=name), data_dir)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio only disables Nagle on sockets whose proto says TCP, and
    # without it every keep-alive response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        raise click.ClickException(f"cannot bind {host}:{port}: {exc.strerror or exc}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    click.echo(f"kiln registry: listening on http://{shown}:{bound} (data {data_dir})", err=True)
    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        timeout_keep_alive=30,
        backlog=2048,
    )
    uvicorn.Server(config).run(sockets=[sock])


@registry_group.command("token")
@click.option(
    "--data",
    "data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Data folder of the registry. Default: $KILN_HOME/registry.",
)
@click.option("--namespace", required=True, help="Namespace the token may publish to.")
def token_cmd(data: Path | None, namespace: str) -> None:
    """Create a publish token scoped to NAMESPACE and print it."""
    from skills_registry.registry.sqlite_store import SQLiteStore

    data_dir = data or _default_data()
    store = _open(lambda: SQLiteStore(data_dir / "registry.db"), data_dir)
    click.echo(store.create_token(namespace))


@registry_group.command("marketplace")
@click.option("--data", "data", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option(
    "--base-url", required=True, help="Public URL of the registry (for links and archive URLs)."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write a Claude Code marketplace folder (.claude-plugin/marketplace.json + skills/).",
)
def marketplace_cmd(data: Path | None, base_url: str, out: Path | None) -> None:
    """Print (or export with --out) a Claude-Code-compatible marketplace of the registry's skills."""
    from skills_registry.registry.marketplace import build_marketplace, export_marketplace
    from skills_registry.registry.storage import open_storage

    data_dir = data or _default_data()
    store, blobs = _open(lambda: open_storage(data_dir), data_dir)
    if out is None:
        click.echo(json.dumps(build_marketplace(store, base_url), indent=2))
        return
    market = export_marketplace(store, blobs, base_url, out)
    click.echo(f"wrote {len(market['plugins'])} skills to {out}")
