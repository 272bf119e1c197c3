"""`kiln skills ...`: find, review, install and publish skills from a registry.

Output meant for scripts goes to stdout (``--json`` where it matters); the review summary and
progress go to stderr. Every refusal (bad signature, changed key, local edits, unreviewed
scripts in CI) is one line and a non-zero exit, raised as a typed error the CLI root prints.
"""

from __future__ import annotations

import json
import os
import sys
import unicodedata
from pathlib import Path

import click

from kiln_errors.setting import SWITCH_WORDS, switch
from lsp_server.cli.skills_options import say_waiting, scope_options, skill_scope
from lsp_server.cli.skills_review import confirm_install, grant_question, print_summary
from lsp_server.headless.terminal import safe
from skills_registry.client import (
    RegistryClient,
    default_registry,
    parse_spec,
    printable,
)
from skills_registry.install import Installed, Installer
from skills_registry.lookalike import shown, skeleton
from skills_registry.registry.errors import RegistryError, TrustError, UsageError
from skills_registry.review import review_summary

_registry_opt = click.option(
    "--registry",
    "registry",
    default=None,
    metavar="URL",
    help="Registry URL (default: KILN_REGISTRY or settings.json 'registry').",
)


def _ci(flag: bool) -> bool:
    """``--ci``, else ``KILN_CI``: 1, true, yes or on; 0, false, no, off or empty is not CI.
    Another value is refused: ``KILN_CI=y`` silently meant "not CI", and a CI install then ran
    scripts its lockfile does not pin."""
    value = os.environ.get("KILN_CI", "")
    on = switch(value)
    if on is None:
        raise UsageError(
            f"KILN_CI must be {SWITCH_WORDS}, not {value.strip().lower()[:40]!r}",
            hint="or pass --ci",
        )
    return flag or on


@click.group(name="skills")
def skills_group() -> None:
    """Find, review, install and publish skills."""


@skills_group.command("search")
@click.argument("query", default="")
@_registry_opt
@click.option("--limit", default=20, type=click.IntRange(1, 100), help="Most skills to list (20).")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print [{id, name, description, latestVersion, deprecated}].",
)
def search_cmd(query: str, registry: str | None, limit: int, as_json: bool) -> None:
    """Search the registry by name and description."""
    with RegistryClient(default_registry(registry)) as client:
        skills = client.search(query, limit=limit)["skills"]
        latin = skeleton(query)
        if not skills and not query.isascii() and latin != query and latin.isascii():
            # a name pasted with a look-alike letter (Cyrillic е): registry names are ASCII
            odd = next(c for c in query if not c.isascii())
            click.echo(
                f"kiln: nothing matches '{shown(query)}': its {shown(odd)} "
                f"({unicodedata.name(odd, '?')}) only looks Latin; showing {latin!r}",
                err=True,
            )
            skills = client.search(latin, limit=limit)["skills"]
    rows = [
        {
            "id": s["id"],
            "name": s["name"],
            "description": s["description"],
            "latestVersion": s["latestVersion"],
            "deprecated": s.get("deprecated") or None,
        }
        for s in skills
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        flag = (
            f"  [deprecated: {printable(str(row['deprecated']), 60)}]" if row["deprecated"] else ""
        )
        click.echo(
            f"{printable(str(row['id']), 130)}@{printable(str(row['latestVersion'] or '-'), 40)}"
            f"  {printable(str(row['description']), 100)}{flag}"
        )
    if not rows:
        click.echo("no skills found", err=True)


@skills_group.command("info")
@click.argument("spec")
@_registry_opt
@click.option(
    "--file",
    "file_path",
    default=None,
    metavar="PATH",
    help="Print one file of the skill (review before install).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def info_cmd(spec: str, registry: str | None, file_path: str | None, as_json: bool) -> None:
    """Show what a skill version contains: files, scripts, allowed-tools, scan findings."""
    from skills_registry.client import Cache, TrustStore, trusted_key
    from skills_registry.verified import check_preview, resolve_verified, signed_file_sha256

    skill_id, wanted = parse_spec(spec)
    with RegistryClient(default_registry(registry)) as client:
        key = trusted_key(client, TrustStore(), first_use=not _ci(False))
        resolved = resolve_verified(client, Cache(), key, skill_id, wanted)
        if resolved.unreachable:
            click.echo(f"kiln: {resolved.offline_note()}", err=True)
        if file_path is not None:
            expected = signed_file_sha256(resolved.doc, file_path)
            data = client.file(skill_id, resolved.doc["version"], file_path)
            check_preview(resolved.doc, file_path, data, expected)
            text = data.decode("utf-8", errors="replace")
            # A file under review must not hide its lines from the reviewer (`\r`, ANSI): in a
            # terminal, controls are shown escaped; piped, the bytes are passed on as they are.
            click.echo(safe(text) if sys.stdout.isatty() else text, nl=False)
            return
    summary = {**review_summary(resolved.doc), "deprecated": resolved.deprecated}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        print_summary(summary, err=False)


@skills_group.command("install")
@click.argument("specs", nargs=-1)
@_registry_opt
@scope_options
@click.option("--yes", "-y", is_flag=True, help="Skip the review prompt.")
@click.option(
    "--frozen",
    is_flag=True,
    help="Install exactly the lockfile (offline from the cache if needed).",
)
@click.option("--force", is_flag=True, help="Overwrite locally modified skills.")
@click.option(
    "--ci",
    is_flag=True,
    help="Refuse unreviewed scripts not pinned in the lockfile (also KILN_CI=1).",
)
@click.option(
    "--grant-tools",
    is_flag=True,
    help="With --user: grant the skill's allowed-tools (recorded in the user's lockfile); "
    "without a grant they only narrow.",
)
def install_cmd(
    specs: tuple[str, ...],
    registry: str | None,
    scope: str,
    root: Path | None,
    yes: bool,
    frozen: bool,
    force: bool,
    ci: bool,
    grant_tools: bool,
) -> None:
    """Install ID[@RANGE] (ranges: 1.2.3, ^1.2.3, ~1.2.3, >=1.2.3, *, or a dist-tag)."""
    if grant_tools and scope != "user":
        raise UsageError(
            "--grant-tools needs --user: grants in a project lockfile are never read",
            hint="kiln skills install --user ID --grant-tools",
        )
    installer = Installer(
        skill_scope(scope, root),
        yes=yes,
        ci=_ci(ci),
        force=force,
        confirm=confirm_install,
        waiting=say_waiting,
        grant=(lambda summary: True) if grant_tools else grant_question(scope),
    )
    if frozen:
        if specs:
            raise UsageError("--frozen installs the lockfile; do not name skills")
        results = installer.install_frozen(lambda url: RegistryClient(url))
    else:
        if not specs:
            raise UsageError(
                "name a skill to install", hint="kiln skills install NAMESPACE/NAME[@RANGE]"
            )
        with RegistryClient(default_registry(registry)) as client:
            results = [installer.install(client, spec) for spec in specs]
    for r in results:
        click.echo(f"{r.action} {r.id}@{r.version} -> {r.path}")
        _report(r, yes)


def _report(r: Installed, yes: bool) -> None:
    """Scan findings (with ``--yes``: nobody saw the review, so the log must) and warnings."""
    for f in r.findings if yes else []:
        click.echo(
            f"  [{f['severity']}] {f['rule']} {printable(str(f['path']))}: "
            f"{printable(str(f['message']))}",
            err=True,
        )
    if r.warning:
        click.echo(f"kiln: warning: {printable(r.warning, 1000)}", err=True)


@skills_group.command("trust")
@click.argument("url")
@click.option("--key", "key", default=None, metavar="BASE64", help="The registry's public key.")
def trust_cmd(url: str, key: str | None) -> None:
    """Pin a registry's signing key out of band (frozen and CI installs require a pin).

    Without --key, show the key the registry serves and how to pin it; compare it with the
    key the operator published before pinning.
    """
    from skills_registry.client import TrustStore, normalize_url
    from skills_registry.local_state import served_keys

    url = normalize_url(url)
    if key is None:
        with RegistryClient(url) as client:
            served = served_keys(url, client.info().get("keys"))
        if not served:
            raise TrustError(f"registry {url} publishes no signing key")
        for k in served:  # each id computed from its key: a served id could be another's
            click.echo(f"{url} serves {k['keyId']}: {k['publicKey']}")
        pin = TrustStore().pinned(url)
        if pin is None:
            click.echo(f"pin it with: kiln skills trust {url} --key KEY", err=True)
        elif any(k["publicKey"] == pin["publicKey"] for k in served):
            click.echo(f"pinned: {pin['keyId']} (the key it serves)")
        else:  # a pinned machine was told "pin it with", as if installs from it would work
            click.echo(
                f"kiln: warning: pinned {pin['keyId']}, not a key it serves: installs from it "
                "are refused until it signs with the pinned key (check the key you were given)",
                err=True,
            )
        return
    entry = TrustStore().pin(url, key)
    click.echo(f"pinned {entry['keyId']} for {url}")
    try:  # pinning works offline; online, say at once if the registry signs with another key
        with RegistryClient(url) as client:
            offered = served_keys(url, client.info().get("keys"))
    except RegistryError:
        return
    if all(k["publicKey"] != entry["publicKey"] for k in offered):
        names = ", ".join(k["keyId"] for k in offered) or "no key"
        click.echo(
            f"kiln: warning: {url} serves {names}, not the pinned {entry['keyId']}: installs "
            "from it are refused until it signs with the pinned key (check the key you were given)",
            err=True,
        )


@skills_group.command("update")
@click.argument("ids", nargs=-1)
@scope_options
@click.option("--yes", "-y", is_flag=True, help="Skip the review prompt.")
@click.option("--force", is_flag=True, help="Overwrite locally modified skills.")
@click.option(
    "--ci",
    is_flag=True,
    help="Refuse unreviewed scripts not pinned in the lockfile (also KILN_CI=1).",
)
def update_cmd(
    ids: tuple[str, ...], scope: str, root: Path | None, yes: bool, force: bool, ci: bool
) -> None:
    """Move locked skills to the newest version their requested range allows."""
    installer = Installer(
        skill_scope(scope, root),
        yes=yes,
        ci=_ci(ci),
        force=force,
        confirm=confirm_install,
        waiting=say_waiting,
        grant=grant_question(scope),
    )
    entries = installer.lock.entries
    if not ids and not entries:
        click.echo(f"nothing to update: no skills in {installer.lock.path}")
    # every id named is checked before any skill moves: a typo in the last one used to stop the
    # command after the ones before it were updated
    missing = [skill_id for skill_id in ids if skill_id not in entries]
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise UsageError(f"{', '.join(missing)} {verb} not in {installer.lock.path}",
                         hint="name skills the lockfile holds (kiln skills list)")  # fmt: skip
    for skill_id in ids or sorted(entries):
        entry = entries[skill_id]
        with RegistryClient(entry.registry) as client:
            r = installer.install(client, f"{skill_id}@{entry.requested}", from_lockfile=True)
        click.echo(f"{r.action} {r.id}@{r.version}")
        _report(r, yes)


def _add_commands() -> None:
    """Local commands (validate, list), the commands over installed skills (outdated, remove,
    verify) and author commands (publish, login, yank, deprecate, tokens, audit, usage)."""
    from lsp_server.cli.skills_author import (
        audit_cmd,
        deprecate_cmd,
        login_cmd,
        publish_cmd,
        tokens_cmd,
        usage_cmd,
        yank_cmd,
    )
    from lsp_server.cli.skills_installed import outdated_cmd, remove_cmd, verify_cmd
    from lsp_server.cli.skills_local import list_cmd, validate_cmd

    skills_group.add_command(validate_cmd, "validate")
    skills_group.add_command(list_cmd, "list")
    for command in (outdated_cmd, remove_cmd, verify_cmd):
        skills_group.add_command(command)
    authoring = (publish_cmd, login_cmd, yank_cmd, deprecate_cmd, tokens_cmd, audit_cmd, usage_cmd)
    for command in authoring:
        skills_group.add_command(command)


_add_commands()
