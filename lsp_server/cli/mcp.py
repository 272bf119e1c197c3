"""`kiln mcp list|approve|revoke`: the MCP servers a session here would start, and the user's
approval of a repository's servers.

A server in the repository's `.kiln/mcp.json` starts only once approved here; the approval is
kept in `$KILN_HOME/mcp-approvals.json` for this workspace, this name and the entry exactly as
it is now (`skills_registry.mcp_trust`). Mistakes are one line and exit status 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from lsp_server.cli.options import root_option
from skills_registry.errors import McpConfigError
from skills_registry.mcp_config import default_kiln_home, shown_name
from skills_registry.mcp_trust import (
    McpPlan,
    ServerState,
    approve,
    plan_servers,
    printable,
    read_approvals,
    revoke,
)

STATUS_TEXT = {
    "user": "no approval needed",
    "approved": "approved",
    "trusted": "trusted by setting (not in --ci)",
    "pending": "pending approval",
    "changed": "pending: changed since approved",
    "shadowed": "ignored: your server of that name wins",
    "skill": "ignored: your skill of that name declares those tools",
    "disabled": 'disabled ("disabled": true)',
}


def _plan(root: Path, *, honour_trust_setting: bool = True) -> McpPlan:
    return plan_servers(
        root.resolve(), default_kiln_home(), honour_trust_setting=honour_trust_setting
    )


def _what(state: ServerState) -> str:
    # The user's own entries may carry tokens in env/headers: named, never printed.
    return printable(state.config.summary(values=state.config.scope == "project"))


@click.group("mcp")
def mcp_group() -> None:
    """List MCP servers; approve or revoke the servers a repository's .kiln/mcp.json declares."""


@mcp_group.command("list")
@root_option
@click.option("--json", "as_json", is_flag=True, help="Print the servers as a JSON list.")
def list_cmd(root: Path, as_json: bool) -> None:
    """Every configured server: origin (user or project), transport and approval status."""
    plan = _plan(root)
    if as_json:
        rows = [
            {
                "name": s.config.name,
                "origin": s.config.scope,
                "transport": s.config.transport,
                "status": s.status,
                "starts": s.runnable,
                "file": s.config.origin,
                "sha256": s.config.fingerprint,
            }
            for s in plan.servers
        ]
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    for warning in plan.warnings:
        click.echo(f"warning: {warning}", err=True)
    if not plan.servers:
        click.echo("no MCP servers configured ($KILN_HOME/mcp.json, .kiln/mcp.json)")
        return
    width = max(len(shown_name(s.config.name)) for s in plan.servers)
    for s in plan.servers:
        click.echo(
            f"{shown_name(s.config.name):<{width}}  {s.config.scope:<7}  "
            f"{s.config.transport:<5}  {STATUS_TEXT[s.status]}  ({_what(s)})"
        )
    if any(s.status in ("pending", "changed") for s in plan.servers):
        click.echo(f"approve with: kiln mcp approve NAME --root {plan.root} (or --all)")


def _chosen(names: tuple[str, ...], all_: bool) -> None:
    if not names and not all_:
        raise click.UsageError("name a server, or pass --all")
    if names and all_:
        raise click.UsageError("pass server names or --all, not both")


@mcp_group.command("approve")
@click.argument("names", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every project server of this workspace.")
@root_option
def approve_cmd(names: tuple[str, ...], all_: bool, root: Path) -> None:
    """Let project servers (.kiln/mcp.json) start in this workspace, as their entries are now."""
    _chosen(names, all_)
    plan = _plan(root, honour_trust_setting=False)
    project = [s for s in plan.servers if s.config.scope == "project"]
    if all_:
        chosen = [s for s in project if s.status not in ("shadowed", "skill")]
        if not chosen:
            click.echo(f"no project MCP servers to approve in {plan.root}")
            return
    else:
        chosen = []
        for name in dict.fromkeys(names):
            state = plan.project(name)
            if state is None:
                known = ", ".join(shown_name(s.config.name) for s in project) or "none"
                mine = " (it is your own server: it needs no approval)" if plan.user(name) else ""
                raise McpConfigError(
                    f"no server {shown_name(name)} in {plan.root}/.kiln/mcp.json{mine}",
                    hint=f"project servers: {known}",
                )
            if state.status == "shadowed":
                raise McpConfigError(
                    f"the project's server {shown_name(name)} is ignored: your server of that "
                    "name in $KILN_HOME/mcp.json is used",
                    hint="rename one of them to use both",
                )
            if state.status == "skill":
                raise McpConfigError(
                    f"the project's server {shown_name(name)} is ignored: your skill of that "
                    f"name in {state.skill} declares those tools",
                    hint="rename one of them to use both",
                )
            chosen.append(state)
    approve(default_kiln_home(), plan.root, [s.config for s in chosen])
    for state in chosen:
        click.echo(f"approved {shown_name(state.config.name)} for {plan.root}: {_what(state)}")


@mcp_group.command("revoke")
@click.argument("names", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every approval of this workspace.")
@root_option
def revoke_cmd(names: tuple[str, ...], all_: bool, root: Path) -> None:
    """Forget approvals: those servers are pending again (the user's own are not affected)."""
    _chosen(names, all_)
    home, where = default_kiln_home(), root.resolve()
    if not all_:
        approved = read_approvals(home, where)
        missing = [n for n in names if n not in approved]
        if missing:
            raise McpConfigError(
                f"not approved in {where}: {', '.join(shown_name(n) for n in missing)}",
                hint=f"approved here: {', '.join(map(shown_name, sorted(approved))) or 'none'}",
            )
    gone = revoke(home, where, None if all_ else list(names))
    if not gone:
        click.echo(f"no approvals to revoke in {where}")
    for name in gone:
        click.echo(f"revoked {shown_name(name)} for {where}")
