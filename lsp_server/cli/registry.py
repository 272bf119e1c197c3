"""`kiln registry ...`: run the skills registry server, print its key, export a marketplace.

``serve`` binds the socket itself so ``--port 0`` works, and prints the real address (on
stderr, ``kiln registry: listening on http://HOST:PORT``) only once the server accepts
connections, so a script that waits for the line can connect at once. Tokens, the audit log
and trusted publishers are ``registry_accounts``.
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
@click.option(
    "--metadata-ttl",
    default=24 * 3600,
    show_default=True,
    type=click.IntRange(60, 30 * 24 * 3600),
    help="Seconds signed skill metadata stays valid (how long a frozen mirror can go unnoticed).",
)
def serve_cmd(
    host: str, port: int, data: Path | None, name: str, log_level: str, metadata_ttl: int
) -> None:
    """Serve the registry API until interrupted."""
    import uvicorn

    from skills_registry.registry.app import create_app

    data_dir = data or _default_data()
    app = _open(lambda: create_app(data_dir, name=name, metadata_ttl=metadata_ttl), data_dir)
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
    line = f"kiln registry: listening on http://{shown}:{bound} (data {data_dir})"

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:  # the socket listens and the loop serves it: say so now
                click.echo(line, err=True)

    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        timeout_keep_alive=30,
        backlog=2048,
    )
    Server(config).run(sockets=[sock])


@registry_group.command("key")
@click.option("--data", "data", type=click.Path(file_okay=False, path_type=Path), default=None)
def key_cmd(data: Path | None) -> None:
    """Print the registry's public signing key (publish it so clients can pin it out of band)."""
    from skills_registry.registry.signing import load_or_create_signer

    data_dir = data or _default_data()
    signer = _open(lambda: load_or_create_signer(data_dir), data_dir)
    click.echo(f"{signer.key_id} {signer.public_key_b64}")


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


def _add_account_commands() -> None:
    from lsp_server.cli.registry_accounts import audit_cmd, publisher_group, token_group

    registry_group.add_command(token_group, "token")
    registry_group.add_command(audit_cmd, "audit")
    registry_group.add_command(publisher_group, "trusted-publisher")


_add_account_commands()
