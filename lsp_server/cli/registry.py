"""`kiln registry ...`: run the skills registry server, print its key, export a marketplace.

``serve`` binds the socket itself so ``--port 0`` works, and prints the real address only once
the server accepts connections, so a script that waits for it can connect at once: the URL
alone as the one line of stdout (for scripts), ``kiln registry: listening on URL (data …)``
on stderr (for people; stderr is also where every log goes). ``--db``/``--blobs``
choose the backends (``registry_options``). Tokens, the audit log and trusted publishers are
``registry_accounts``; copying and sweeping are ``registry_ops``.
"""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path
from typing import Any

import click

from lsp_server.cli.options import EnvNamedOption, FiniteFloat
from lsp_server.cli.registry_options import (
    BLOBS_OPTION,
    DATA_OPTION,
    DB_OPTION,
    default_data,
    open_or_fail,
    quota_options,
    warn_bad_ids,
)
from skills_registry.registry.quotas import Quotas

_default_data, _open = default_data, open_or_fail


def _named_file(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A key file's name that is blank is a slip, not a name: `KILN_REGISTRY_SIGNING_KEY_FILE=" "`
    had `serve` create a new key in a file called " " in the current folder."""
    if value is not None and not str(value).strip():
        raise click.BadParameter(f"{str(value)!r} is a blank file name.")
    return value


SIGNING_KEY_OPTION = click.option(
    "--signing-key",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    envvar="KILN_REGISTRY_SIGNING_KEY_FILE",
    cls=EnvNamedOption,
    callback=_named_file,
    help="Ed25519 key file shared by every instance (created 0600 if missing; also "
    "KILN_REGISTRY_SIGNING_KEY_FILE); "
    "or the key itself in KILN_REGISTRY_SIGNING_KEY. Default: <data>/keys/ed25519.key.",
)


def _server_extras() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise click.ClickException(
            "the registry server needs its extra: pip install 'kiln-agent[registry]'"
        ) from None


def _redact(url: str) -> str:
    """A database URL without its password, for logs."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@", 1)
    return url


@click.group(name="registry")
def registry_group() -> None:
    """Run a skills registry (the marketplace) and manage its tokens."""


def checked_base_url(base_url: str) -> str:
    """``--base-url`` if it is an http(s) URL naming a host, else a usage error (exit 2)."""
    if not re.fullmatch(r"https?://[^/\s?#]+(/[^\s?#]*)?", base_url):
        raise click.UsageError(f"--base-url must be an http(s) URL, not {base_url!r}")
    return base_url


@registry_group.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option(
    "--port",
    default=8750,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port (0 picks a free one).",
)
@DATA_OPTION
@DB_OPTION
@BLOBS_OPTION
@SIGNING_KEY_OPTION
@click.option(
    "--redirect-downloads",
    is_flag=True,
    help="Answer archive downloads from object storage with a 302 to a presigned URL.",
)
@click.option("--access-log", is_flag=True, help="One JSON line per request on stderr.")
@click.option(
    "--base-url",
    default=None,
    metavar="URL",
    help="The registry's public URL, for the absolute URLs it serves (default: from each "
    "request's Host header, answered with Vary: Host).",
)
@click.option(
    "--name", default="kiln-registry", show_default=True, help="Registry name shown to clients."
)
@click.option(
    "--log-level",
    default="warning",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    help="stderr log level of the server.",
)
@click.option(
    "--metadata-ttl",
    default=24 * 3600,
    show_default=True,
    type=click.IntRange(60, 30 * 24 * 3600),
    help="Seconds signed skill metadata stays valid (how long a frozen mirror can go unnoticed).",
)
@click.option(
    "--read-timeout",
    default=60.0,
    show_default=True,
    type=FiniteFloat(0.1, 3600),
    help="Seconds a client has to send a request's headers and body (a slow client gets a 408).",
)
@quota_options()
def serve_cmd(
    host: str,
    port: int,
    data: Path | None,
    db: str | None,
    blobs: str | None,
    signing_key: Path | None,
    redirect_downloads: bool,
    access_log: bool,
    base_url: str | None,
    name: str,
    log_level: str,
    metadata_ttl: int,
    read_timeout: float,
    quotas: Quotas,
) -> None:
    """Serve the registry API until interrupted."""
    if base_url is not None:
        checked_base_url(base_url)
    _server_extras()
    import uvicorn

    from skills_registry.registry.app import create_app
    from skills_registry.registry.ops import enable_access_log
    from skills_registry.registry.slow_clients import protocol_with_read_timeout

    data_dir = data or _default_data()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio only disables Nagle on sockets whose proto says TCP, and
    # without it every keep-alive response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:  # bound before anything is created: a port in use leaves no data folder, no key
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise click.ClickException(f"cannot bind {host}:{port}: {exc.strerror or exc}") from None
    try:
        app = _open(
            lambda: create_app(
                data_dir,
                name=name,
                metadata_ttl=metadata_ttl,
                db=db,
                blobs=blobs,
                signing_key=signing_key,
                redirect_downloads=redirect_downloads,
                base_url=base_url,
                quotas=quotas,
            ),
            data_dir,
        )
    except BaseException:
        sock.close()
        raise
    if access_log:
        enable_access_log()
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    where = f"db {_redact(db)}" if db else f"data {data_dir}"
    url = f"http://{shown}:{bound}"

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:  # the socket listens and the loop serves it: say so now
                click.echo(f"kiln registry: listening on {url} ({where})", err=True)
                try:
                    click.echo(url)  # flushed: a script reading it may connect at once
                except OSError:  # a reader that went away already: the server still serves
                    pass

    config = uvicorn.Config(
        app,
        http=protocol_with_read_timeout(read_timeout),
        log_level=log_level,
        access_log=False,
        lifespan="off",
        timeout_keep_alive=30,
        backlog=2048,
    )
    Server(config).run(sockets=[sock])


@registry_group.command("key")
@DATA_OPTION
@DB_OPTION
@SIGNING_KEY_OPTION
@click.option(
    "--new",
    "create",
    is_flag=True,
    help="Create the key when there is none (never replaces one, nor the key a database "
    "is already signed with).",
)
def key_cmd(data: Path | None, db: str | None, signing_key: Path | None, create: bool) -> None:
    """Print the registry's public signing key (publish it so clients can pin it out of band)."""
    from skills_registry.registry.backends import load_signer, open_backends
    from skills_registry.registry.signing import KEY_FILE

    data_dir = data or _default_data()
    path = signing_key or data_dir / KEY_FILE
    if create and os.environ.get("KILN_REGISTRY_SIGNING_KEY"):
        raise click.UsageError("--new creates a key file; unset KILN_REGISTRY_SIGNING_KEY first")
    if create and path.exists():
        raise click.ClickException(
            f"a signing key already exists at {path}; --new never replaces one (every version "
            "it signed and every client's pin depend on it)"
        )
    store = None
    if create and (db or (data_dir / "registry.db").exists()):
        store = _open(lambda: open_backends(data_dir, db).store, data_dir)
    signer = _open(lambda: load_signer(data_dir, signing_key, create=create, store=store), data_dir)
    if create:
        click.echo(
            f"kiln registry: created a new signing key at {path} (mode 0600): back it up, "
            "a lost key cannot be replaced without every client re-pinning",
            err=True,
        )
    click.echo(f"{signer.key_id} {signer.public_key_b64}")


@registry_group.command("marketplace")
@DATA_OPTION
@DB_OPTION
@BLOBS_OPTION
@click.option(
    "--base-url", required=True, help="Public URL of the registry (for links and archive URLs)."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write a Claude Code marketplace folder (.claude-plugin/marketplace.json + skills/).",
)
def marketplace_cmd(
    data: Path | None, db: str | None, blobs: str | None, base_url: str, out: Path | None
) -> None:
    """Print (or export with --out) a Claude-Code-compatible marketplace of the registry's skills."""
    from skills_registry.registry.backends import open_backends
    from skills_registry.registry.marketplace import build_marketplace, export_marketplace

    checked_base_url(base_url)  # its URLs go into every plugin source: `not a url` was written
    data_dir = data or _default_data()
    if db is None and not (data_dir / "registry.db").exists():
        # An export reads a registry; a mistyped folder must not become a new, empty one.
        raise click.ClickException(
            f"no registry in {data_dir} (no registry.db: pass the --data folder "
            "`kiln registry serve` uses, or --db URL)"
        )
    backends = _open(lambda: open_backends(data_dir, db, blobs), data_dir)
    from skills_registry.archive import read_archive
    from skills_registry.registry.gitrepo import build_repo

    def commit(doc: dict[str, Any]) -> str:  # served shape: absolute git sources, as served
        contents = read_archive(backends.blobs.get(doc["archiveSha256"]))
        return build_repo(contents, f"{doc['id']}@{doc['version']}").commit

    left_out: list[str] = []
    unreadable: list[str] = []
    if out is None:
        market = build_marketplace(
            backends.store, base_url, git_commit=commit, left_out=left_out, unreadable=unreadable
        )
        click.echo(json.dumps(market, indent=2))
    else:
        market = export_marketplace(
            backends.store, backends.blobs, base_url, out, left_out=left_out, unreadable=unreadable
        )
        click.echo(f"wrote {len(market['plugins'])} skills to {out}")
    warn_bad_ids(left_out, "left out of the marketplace")
    if unreadable:
        from skills_registry.redirects import printable

        click.echo(
            f"kiln: warning: {len(unreadable)} latest release(s) break the archive rules "
            f"(published before they held): {printable('; '.join(unreadable), 600)}; left out "
            "of the marketplace",
            err=True,
        )


def _add_account_commands() -> None:
    from lsp_server.cli.registry_accounts import audit_cmd, publisher_group, token_group, usage_cmd

    registry_group.add_command(token_group, "token")
    registry_group.add_command(audit_cmd, "audit")
    registry_group.add_command(usage_cmd, "usage")
    registry_group.add_command(publisher_group, "trusted-publisher")
    from lsp_server.cli.registry_ops import migrate_cmd, sweep_cmd

    registry_group.add_command(migrate_cmd, "migrate")
    registry_group.add_command(sweep_cmd, "sweep")


_add_account_commands()
