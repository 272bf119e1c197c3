"""``kiln skills outdated``, ``remove`` and ``verify``: the commands over the skills a scope has
installed (its lockfile and folders); the ``kiln skills`` group adds them with ``add_command``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from lsp_server.cli.skills_options import say_waiting, scope_options, skill_scope
from skills_registry.client import RegistryClient, printable
from skills_registry.install import Installer
from skills_registry.skill_folder import unlocked_installs


@click.command("outdated")
@scope_options
@click.option("--json", "as_json", is_flag=True, help="Print the rows as a JSON list.")
def outdated_cmd(scope: str, root: Path | None, as_json: bool) -> None:
    """List locked skills with newer versions (wanted = within range, latest = dist-tag)."""
    from skills_registry.client import Cache, TrustStore, trusted_key
    from skills_registry.lockfile import Lockfile
    from skills_registry.registry.semver import max_satisfying
    from skills_registry.verified import check_lists_locked, fetch_metadata

    rows = []
    trust, cache = TrustStore(), Cache()
    lock = Lockfile.load(skill_scope(scope, root).lock_path)
    for skill_id, entry in sorted(lock.entries.items()):
        with RegistryClient(entry.registry) as client:  # signed metadata, as install resolves
            key = trusted_key(client, trust, first_use=False)
            # what the registry holds now: a cached copy would call a skill "up to date"
            signed = fetch_metadata(client, cache, key, skill_id, offline=False)
        if key["keyId"] == entry.keyId:  # the locked registry's (or a mirror's) metadata
            check_lists_locked(signed, skill_id, entry.version)
        live = [v for v, d in signed["versions"].items() if d.get("status") != "yanked"]
        locked = signed["versions"].get(entry.version) or {}
        row: dict[str, Any] = {
            "id": skill_id,
            "current": entry.version,
            "status": str(locked.get("status") or "active"),
            "statusReason": str(locked.get("statusReason") or ""),
            "wanted": max_satisfying(live, entry.requested),
            "latest": (signed.get("distTags") or {}).get("latest"),
        }
        if (
            row["status"] != "active"
            or row["wanted"] != entry.version
            or row["latest"] != entry.version
        ):
            rows.append(row)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    for row in [] if as_json else rows:
        # no version left to want (every one in range yanked) reads "none", not Python's None
        wanted, latest = (row[k] or "none" for k in ("wanted", "latest"))
        current = row["current"]
        if row["status"] != "active":  # what `install --frozen` still installs: say why not
            current += f" ({row['status']}: {row['statusReason'] or 'no reason given'})"
        click.echo(
            printable(f"{row['id']}  current {current}  wanted {wanted}  latest {latest}", 1000)
        )
    if not as_json and not rows:
        click.echo(
            f"all {len(lock.entries)} locked skill(s) are up to date"
            if lock.entries
            else f"no skills in {lock.path}"
        )


@click.command("remove")
@click.argument("skill_id")
@scope_options
@click.option("--force", is_flag=True, help="Remove even if modified locally.")
def remove_cmd(skill_id: str, scope: str, root: Path | None, force: bool) -> None:
    """Uninstall a skill and drop it from the lockfile."""
    from skills_registry.skill_folder import read_marker

    path = Installer(skill_scope(scope, root), force=force, waiting=say_waiting).remove(skill_id)
    owner = read_marker(path).get("id") if path.is_dir() and not path.is_symlink() else None
    if owner not in (None, skill_id):
        shown = printable(str(owner), 130)
        click.echo(f"removed {skill_id} from the lockfile; {path} holds {shown}, left in place")
    else:
        click.echo(f"removed {skill_id} ({path})")


@click.command("verify")
@scope_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify_cmd(scope: str, root: Path | None, as_json: bool) -> None:
    """Check installed skills against the lockfile and pinned registry keys (offline)."""
    installer = Installer(skill_scope(scope, root))
    report = installer.verify()
    unlocked = unlocked_installs(installer.scope.skills_dir, set(installer.lock.entries))
    report += unlocked
    if as_json:
        click.echo(json.dumps(report, indent=2))
    elif not report:
        click.echo(f"nothing to verify: no skills in {installer.lock.path}")
    for row in [] if as_json else report:
        click.echo(
            f"{'ok  ' if row['ok'] else 'FAIL'} {row['id']}@{row['version']}  {'; '.join(row['problems'])}"
        )
    failed = [r["id"] for r in report if not r["ok"]]
    if failed:
        from skills_registry.registry.errors import IntegrityError

        raise IntegrityError(
            f"{len(failed)} skill(s) failed verification: {', '.join(failed)}",
            hint="reinstall with `kiln skills install --frozen --force`"
            + ("; record an unlocked skill with the install its line names" if unlocked else ""),
        )
