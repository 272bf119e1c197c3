"""`kiln lsp` and `kiln acp`: the two editor-facing servers, both speaking JSON-RPC on stdio.

Stdout is the protocol channel, so nothing here prints; logs go to stderr (or the client's log
window). Server modules are imported inside the commands to keep `kiln --help` fast.
"""

from __future__ import annotations

import sys

import click

from agent.errors import UsageError
from kiln_errors.setting import whole_in


def _parse_tcp(value: str | None) -> tuple[str, int] | None:
    if value is None:
        return None
    host, sep, port = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):  # [::1]:2087, as URLs write an IPv6 host
        host = host[1:-1]
    number = whole_in(port, 1, 65535) if port.isdigit() else None  # "²" passes isdigit
    if not sep or not host or number is None:
        raise UsageError(
            f"--tcp expects HOST:PORT, got {value!r}", hint="e.g. --tcp 127.0.0.1:2087"
        )
    return host, number


@click.command("lsp")
@click.option(
    "--tcp", "tcp", metavar="HOST:PORT", help="Listen on TCP instead of stdio (debugging)."
)
@click.option(
    "--log-level",
    default="warning",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    help="stderr log level (capitals work too, as in KILN_LOG_LEVEL).",
)
def lsp_cmd(tcp: str | None, log_level: str) -> None:
    """Run the Kiln language server (stdio by default)."""
    address = _parse_tcp(tcp)
    from kiln_errors.settled_imports import settled_imports

    with settled_imports():  # pygls and lsprotocol: ~0.4 s of CPU, most of the start
        from lsp_server.lsp.server import run

    sys.exit(run(tcp=address, log_level=log_level))


@click.command("acp")
def acp_cmd() -> None:
    """Run the Agent Client Protocol server on stdio (Zed, JetBrains, Neovim ACP plugins)."""
    from kiln_errors.settled_imports import settled_imports

    with settled_imports():  # the ACP SDK's pydantic models: ~0.8 s of CPU, most of the start
        from lsp_server.acp.process import run_stdio

    run_stdio()
