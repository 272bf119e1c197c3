"""`kiln registry token|audit|usage|trusted-publisher`: who may write to a registry, who did.

Operator commands over the data folder (they open the SQLite store directly, so they work
while ``serve`` runs). ``token`` alone creates a token (the secret is printed once, to stdout);
``token list`` and ``token revoke ID`` manage them; ``audit`` prints every write with the token
that made it; ``usage`` how close a namespace is to the quotas (as its owner reads them over
HTTP); ``trusted-publisher`` maps a CI identity (OIDC) to a namespace.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click

from lsp_server.cli.registry_options import (
    DATA_OPTION,
    DB_OPTION_HIDDEN_VALUE,
    open_existing_store,
    open_store,
    quota_options,
    warn_bad_ids,
)
from skills_registry.registry.errors import UsageError
from skills_registry.registry.id_rules import SKILL_ID_RE
from skills_registry.registry.quotas import Quotas, usage_report


def _data_opt(command: Any) -> Any:
    """``--data`` and ``--db`` (the store these commands open)."""
    return DATA_OPTION(DB_OPTION_HIDDEN_VALUE(command))


def _store(data: Path | None) -> Any:
    return open_store(data)


def expiry(text: str | None) -> str | None:
    """``30d``, ``12h``, ``90m`` from now, or an ISO 8601 time; None for no expiry."""
    if not text:
        return None
    match = re.fullmatch(r"(\d+)([dhm])", text.strip())
    if match:
        unit = {"d": "days", "h": "hours", "m": "minutes"}[match[2]]
        try:
            when = datetime.now(UTC) + timedelta(**{unit: int(match[1])})
        except OverflowError:
            raise _too_far(text) from None
    else:
        try:
            when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise click.BadParameter(
                f"{text!r} (use 30d, 12h, 90m or an ISO 8601 time such as 2026-01-31T12:00:00Z)",
                param_hint="'--expires'",
            ) from None
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        try:  # stored and compared in UTC: 9999-12-31T23:59-14:00 is past year 9999 there
            when.astimezone(UTC)
        except OverflowError:
            raise _too_far(text) from None
    if when <= datetime.now(UTC):  # the token printed once would never work
        raise click.BadParameter(f"{text!r} is not in the future", param_hint="'--expires'")
    return text if not match else when.isoformat()


def _too_far(text: str) -> click.BadParameter:
    return click.BadParameter(
        f"{text!r} is too far in the future (at most 9999-12-31 UTC)", param_hint="'--expires'"
    )


@click.group("token", invoke_without_command=True)
@_data_opt
@click.option("--namespace", default=None, help="Namespace the token may write to.")
@click.option(
    "--label", default="", help="What the token is for (shown in lists and the audit log)."
)
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    type=click.Choice(["publish", "yank", "tag"]),
    help="Allowed writes (repeat; default all): publish, yank (status, deprecation), tag.",
)
@click.option("--expires", default=None, metavar="30d|12h|ISO", help="Expiry (default: none).")
@click.pass_context
def token_group(
    ctx: click.Context,
    data: Path | None,
    namespace: str | None,
    label: str,
    scopes: tuple[str, ...],
    expires: str | None,
) -> None:
    """Create a token for NAMESPACE and print it once (or: token list, token revoke ID)."""
    if ctx.invoked_subcommand is not None:
        return
    if not namespace:
        raise UsageError("pass --namespace NS to create a token", hint="or: token list / revoke ID")
    from skills_registry.registry.sqlite_accounts import check_token_fields
    from skills_registry.registry.storage import SCOPES

    kwargs: dict[str, Any] = {"label": label, "expires_at": expiry(expires)}
    check_token_fields(namespace, label, scopes or SCOPES)  # refused before a registry is made
    store = _store(data)
    if scopes:
        kwargs["scopes"] = list(scopes)
    click.echo(store.create_token(namespace, **kwargs))


@token_group.command("list")
@_data_opt
@click.option("--namespace", default=None, help="Only tokens of this namespace.")
@click.option("--json", "as_json", is_flag=True, help="Print the tokens as a JSON list.")
def token_list(data: Path | None, namespace: str | None, as_json: bool) -> None:
    """List tokens (ids, labels, scopes, expiry, revocation; never secrets)."""
    from skills_registry.redirects import printable

    rows = _store(data).list_tokens(namespace)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for t in rows:
        state = (
            f"revoked {t['revokedAt']}"
            if t["revokedAt"]
            else f"expires {t['expiresAt'] or 'never'}"
        )
        line = f"{t['id']}  {t['namespace']}  {','.join(t['scopes'])}  {state}  {t['label'] or '-'}"
        click.echo(printable(line, 2000))  # a namespace from before the id rules held a newline


@token_group.command("revoke")
@click.argument("token_id")
@_data_opt
def token_revoke(token_id: str, data: Path | None) -> None:
    """Revoke a token by id: every later request with it is refused (401)."""
    from lsp_server.cli.skills_author import checked_token_id

    checked_token_id(token_id)  # before the store opens: a typo must not create a registry
    record = _store(data).revoke_token(token_id)
    click.echo(f"revoked {record['id']} ({record['label'] or 'no label'})")


@click.command("audit")
@_data_opt
@click.option("--namespace", default=None, help="Only writes to this namespace.")
@click.option(
    "--since",
    default=0,
    type=click.IntRange(0, 2**63 - 1),  # what every store can bind
    help="Only entries after this sequence number.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the entries as a JSON list.")
def audit_cmd(data: Path | None, namespace: str | None, since: int, as_json: bool) -> None:
    """Every write: when, what, which archive sha256, and the token (id and label) that did it."""
    from skills_registry.redirects import printable

    rows = open_existing_store(data).audit_log(namespace, since, 1000)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        what = f"{r['id']}@{r['version']}" if r["version"] else r["id"]
        sha = f" sha256:{r['sha256']}" if r["sha256"] else ""
        line = (
            f"{r['seq']} {r['at']} {r['action']} {what}{sha} by {r['tokenId']} ({r['tokenLabel']})"
        )
        click.echo(printable(line, 2000))  # one entry, one line
    bad = [str(r["id"]) for r in rows if not SKILL_ID_RE.fullmatch(str(r["id"]))]
    warn_bad_ids(bad, "shown escaped above; the marketplace leaves them out")


@click.command("usage")
@click.argument("namespace")
@_data_opt
@quota_options()
@click.option("--json", "as_json", is_flag=True, help="Print the usage as a JSON object.")
def usage_cmd(namespace: str, data: Path | None, quotas: Quotas, as_json: bool) -> None:
    """How close a namespace is to the quotas (pass the ones the registry is served with)."""
    from lsp_server.cli.skills_author import checked_namespace, print_usage

    checked_namespace(namespace)  # `ACME` or `a/b` holds nothing: never report zeros for it
    answer = usage_report(quotas, open_existing_store(data).namespace_usage(namespace), namespace)
    print_usage(answer, f"namespace {namespace!r}", as_json)


@click.group("trusted-publisher")
def publisher_group() -> None:
    """Let a CI workflow publish with its OIDC ID token instead of a stored secret."""


@publisher_group.command("add")
@_data_opt
@click.option("--namespace", required=True, help="Namespace the workflow may publish to.")
@click.option("--repository", required=True, help="OWNER/NAME of the CI repository.")
@click.option("--workflow", required=True, help="Workflow file, e.g. .github/workflows/release.yml")
@click.option("--environment", default="", help="Required deployment environment (optional).")
@click.option(
    "--repository-id",
    default="",
    help="The repository's numeric id (GitHub: `gh api repos/OWNER/NAME --jq .id`); "
    "default: recorded from the first ID token that matches.",
)
@click.option(
    "--owner-id",
    default="",
    help="The owner's numeric id (`gh api users/OWNER --jq .id`); default: as --repository-id.",
)
@click.option(
    "--issuer",
    default="https://token.actions.githubusercontent.com",
    show_default=True,
    help="OIDC issuer (GitHub Actions by default).",
)
def publisher_add(
    data: Path | None,
    namespace: str,
    repository: str,
    workflow: str,
    environment: str,
    issuer: str,
    repository_id: str,
    owner_id: str,
) -> None:
    """Let one workflow of one repository publish to NAMESPACE (prints the publisher's id)."""
    record = _store(data).add_trusted_publisher(
        namespace, issuer, repository, workflow, environment, repository_id, owner_id
    )
    click.echo(f"{record['id']}  {namespace} <- {repository} {workflow} ({issuer})")


@publisher_group.command("list")
@_data_opt
def publisher_list(data: Path | None) -> None:
    """The trusted publishers: id, namespace, repository, workflow, environment, issuer."""
    for p in _store(data).trusted_publishers():
        env = f" env={p['environment']}" if p["environment"] else ""
        ids = f" repository_id={p['repositoryId'] or '?'} owner_id={p['ownerId'] or '?'}"
        click.echo(
            f"{p['id']}  {p['namespace']} <- {p['repository']} {p['workflow']}{env}{ids}"
            f" ({p['issuer']})"
        )


@publisher_group.command("remove")
@click.argument("publisher_id")
@_data_opt
def publisher_remove(publisher_id: str, data: Path | None) -> None:
    """Stop trusting a publisher, by the id `add` printed."""
    _store(data).remove_trusted_publisher(publisher_id)
    click.echo(f"removed {publisher_id}")
