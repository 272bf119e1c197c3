"""`kiln skills publish|login|yank|deprecate|tokens|audit|usage`: a skill's author's commands.

Publishing validates the folder locally first (every problem at once), then packs it the way
the registry expects. Without a token it tries trusted publishing: in a CI that offers an
OIDC ID token (GitHub Actions with ``id-token: write``, or ``KILN_OIDC_TOKEN``) it trades that
for a short-lived publish token, so no long-lived secret has to live in the CI.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from skills_registry.client import (
    RegistryClient,
    default_registry,
    load_token,
    parse_spec,
    printable,
    save_token,
)
from skills_registry.registry.errors import UsageError
from skills_registry.registry.semver import is_version

_registry_opt = click.option(
    "--registry",
    "registry",
    default=None,
    metavar="URL",
    help="Registry URL (default: KILN_REGISTRY or settings.json 'registry').",
)


@click.command("publish")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_registry_opt
@click.option(
    "--token",
    default=None,
    help="Publish token (default: KILN_REGISTRY_TOKEN, `kiln skills login`, or the CI's OIDC "
    "identity via trusted publishing).",
)
@click.option(
    "--version", "version", default=None, help="Version (default: metadata.version in SKILL.md)."
)
@click.option("--namespace", default=None, help="Namespace (default: the token's namespace).")
@click.option(
    "--include-secret-files",
    is_flag=True,
    help="Publish files that look like credentials (.env, id_rsa, *.pem…) all the same.",
)
def publish_cmd(
    path: Path,
    registry: str | None,
    token: str | None,
    version: str | None,
    namespace: str | None,
    include_secret_files: bool,
) -> None:
    """Validate, pack and publish the skill folder PATH."""
    from skills_registry.archive import build_archive, read_dir
    from skills_registry.registry.errors import ArchiveError, ValidationFailed
    from skills_registry.registry.scan import secret_files
    from skills_registry.spec import parse_frontmatter, validate_skill_dir

    problems = validate_skill_dir(path)
    if problems:
        raise ValidationFailed(problems, hint="run `kiln skills validate PATH`")
    try:
        contents = read_dir(path)
    except ArchiveError as exc:  # its usual hint names this very command
        raise ArchiveError(
            str(exc), hint=f"fix or remove it in {path}, then publish again"
        ) from None
    secrets = [] if include_secret_files else secret_files(contents.files)
    if secrets:  # a published version can be yanked, never deleted: refuse before uploading
        raise UsageError(
            f"{path} holds files that look like credentials ({printable(', '.join(secrets))}); "
            "nothing was published, and a published version can never be deleted",
            hint="remove them, or pass --include-secret-files if they are meant to be public",
        )
    front, _ = parse_frontmatter((path / "SKILL.md").read_text(encoding="utf-8-sig"))
    meta = front.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    where = "--version" if version else "metadata.version in SKILL.md"
    version = version or (str(meta["version"]) if meta.get("version") else None)
    if not version:
        raise UsageError(
            "no version given", hint="pass --version X.Y.Z or set metadata.version in SKILL.md"
        )
    if not is_version(version):  # bad input first: before any token or registry is looked for
        raise UsageError(
            f"invalid version {printable(version)!r} ({where}): use exact SemVer such as 1.2.3",
            hint="pass --version X.Y.Z or set metadata.version in SKILL.md",
        )
    url = default_registry(registry)
    token = _token(url, token)
    if not token:  # trusted publishing: the CI's OIDC identity instead of a stored secret
        token = _trusted_publishing_token(url)
    with RegistryClient(url, token) as client:
        namespace = namespace or client.whoami()
        contents.top = str(front["name"])
        doc = client.publish(f"{namespace}/{front['name']}", version, build_archive(contents))
    click.echo(f"published {doc['id']}@{doc['version']} sha256:{doc['archiveSha256']}")
    scan = doc.get("scan")
    findings = scan.get("findings") if isinstance(scan, dict) else None
    for f in findings if isinstance(findings, list) else []:
        if isinstance(f, dict):
            fields = (f.get(k, "") for k in ("severity", "rule", "path", "message"))
            click.echo("  [{}] {} {}: {}".format(*map(str, fields)), err=True)


def _trusted_publishing_token(url: str) -> str | None:
    from skills_registry.ci_identity import ci_id_token

    with RegistryClient(url) as client:
        oidc = client.info().get("oidc")
        audience = str(oidc.get("audience") or "") if isinstance(oidc, dict) else ""
        id_token = ci_id_token(audience) if audience else None
        if id_token is None:
            return None
        minted = client.exchange_oidc(id_token)
    click.echo(
        f"trusted publishing: token for {minted['namespace']!r} until {minted['expiresAt']}",
        err=True,
    )
    return str(minted["token"])


@click.command("login")
@_registry_opt
@click.option(
    "--token", prompt=True, hide_input=True, help="Publish token from the registry operator."
)
def login_cmd(registry: str | None, token: str) -> None:
    """Store a publish token for a registry in $KILN_HOME/credentials.json (mode 0600)."""
    url = default_registry(registry)
    with RegistryClient(url, token) as client:
        namespace = client.whoami()
    path = save_token(url, token)
    click.echo(f"logged in to {url} as namespace {namespace!r} (token stored in {path})")


_TOKEN_OPTION = click.option(
    "--token",
    default=None,
    help="Registry token (default: KILN_REGISTRY_TOKEN, else the one `kiln skills login` stored).",
)


def _token(url: str, given: str | None) -> str | None:
    """``--token``, else ``KILN_REGISTRY_TOKEN``, else the token stored for ``url``."""
    return given or os.environ.get("KILN_REGISTRY_TOKEN") or load_token(url)


@click.command("yank")
@click.argument("spec")
@_registry_opt
@_TOKEN_OPTION
@click.option("--reason", default="", help="Why (shown to users).")
@click.option("--undo", is_flag=True, help="Restore a yanked version.")
def yank_cmd(spec: str, registry: str | None, token: str | None, reason: str, undo: bool) -> None:
    """Yank ID@VERSION: kept for lockfiles, dropped from resolution."""
    skill_id, version = parse_spec(spec)
    if not is_version(version):  # a range or a tag would name no version: a 404 about "@*"
        shown = "no version" if "@" not in spec else f"{printable(version)!r}, not one"
        raise UsageError(
            f"kiln skills {'yank --undo' if undo else 'yank'} takes one exact version ({shown})",
            hint=f"kiln skills yank {skill_id}@1.2.3",
        )
    url = default_registry(registry)
    with RegistryClient(url, _token(url, token)) as client:
        doc = client.set_status(skill_id, version, "active" if undo else "yanked", reason)
    click.echo(f"{doc['id']}@{doc['version']} is now {doc['status']}")


@click.command("deprecate")
@click.argument("skill_id")
@click.option("--message", default=None, help="Deprecation message; omit with --undo.")
@click.option("--undo", is_flag=True, help="Lift the deprecation.")
@_registry_opt
@_TOKEN_OPTION
def deprecate_cmd(
    skill_id: str, message: str | None, undo: bool, registry: str | None, token: str | None
) -> None:
    """Mark a whole skill deprecated (still installable, flagged in search)."""
    if not undo and not message:
        raise UsageError("pass --message TEXT (or --undo)")
    url = default_registry(registry)
    with RegistryClient(url, _token(url, token)) as client:
        client.deprecate(skill_id, None if undo else message)
    click.echo(f"{skill_id}: {'undeprecated' if undo else 'deprecated'}")


@click.command("tokens")
@_registry_opt
@_TOKEN_OPTION
@click.option("--revoke", "revoke", default=None, metavar="ID", help="Revoke this token id.")
@click.option("--json", "as_json", is_flag=True, help="Print the tokens as a JSON list.")
def tokens_cmd(registry: str | None, token: str | None, revoke: str | None, as_json: bool) -> None:
    """List your namespace's tokens (labels, scopes, expiry; never secrets), or revoke one."""
    import json

    if revoke is not None:
        checked_token_id(revoke)  # `../x` was a bare "kiln: Not Found"
    url = default_registry(registry)
    with RegistryClient(url, _token(url, token)) as client:
        if revoke:
            record = client.revoke_token(revoke)
            click.echo(f"revoked {record['id']} ({record['label'] or 'no label'})")
            return
        rows = client.tokens()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for t in rows:
        state = (
            f"revoked {t['revokedAt']}"
            if t["revokedAt"]
            else f"expires {t['expiresAt'] or 'never'}"
        )
        click.echo(f"{t['id']}  {','.join(t['scopes'])}  {state}  {t['label'] or '-'}")


@click.command("audit")
@_registry_opt
@_TOKEN_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the entries as a JSON list.")
def audit_cmd(registry: str | None, token: str | None, as_json: bool) -> None:
    """Every write to your namespace: when, what, archive sha256, and which token did it."""
    import json

    url = default_registry(registry)
    with RegistryClient(url, _token(url, token)) as client:
        rows = client.audit()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        what = f"{r['id']}@{r['version']}" if r["version"] else r["id"]
        sha = f" sha256:{r['sha256']}" if r["sha256"] else ""
        click.echo(f"{r['at']} {r['action']} {what}{sha} by {r['tokenId']} ({r['tokenLabel']})")


@click.command("usage")
@click.argument("namespace", required=False)
@_registry_opt
@_TOKEN_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the usage as a JSON object.")
def usage_cmd(
    namespace: str | None, registry: str | None, token: str | None, as_json: bool
) -> None:
    """How close your namespace is to the registry's quotas (bytes, versions, publish rate)."""
    if namespace is not None:
        checked_namespace(namespace)  # before any request: a 404 "Not Found" named nothing
    url = default_registry(registry)
    with RegistryClient(url, _token(url, token)) as client:
        namespace = namespace or client.whoami()
        answer = client.usage(namespace)
    print_usage(answer, f"namespace {printable(namespace, 200)!r} on {url}", as_json)


def checked_namespace(namespace: str) -> str:
    """``namespace`` if it is one the registry could hold (docs/registry.md, Publish rules)."""
    from skills_registry.registry.id_rules import NAMESPACE_RE

    if not NAMESPACE_RE.match(namespace):
        raise UsageError(
            f"invalid namespace {printable(namespace, 200)!r}",
            hint="a namespace is 1-40 lowercase letters, digits and inner '-'",
        )
    return namespace


def checked_token_id(token_id: str) -> str:
    """``token_id`` if it has the shape of a token's public id (``tok_`` + 12 hex digits)."""
    import re

    if not re.fullmatch(r"tok_[0-9a-f]{12}", token_id):
        raise UsageError(
            f"invalid token id {printable(token_id, 200)!r}",
            hint="a token id is tok_ and 12 hex digits; `kiln skills tokens` lists them",
        )
    return token_id


def print_usage(answer: dict[str, Any], heading: str, as_json: bool) -> None:
    """What `kiln skills usage` and `kiln registry usage` print: the JSON, or a heading and
    ``usage_lines``."""
    import json

    if as_json:
        click.echo(json.dumps(answer, indent=2))
        return
    click.echo(heading)
    for line in usage_lines(answer):
        click.echo(line)


def usage_lines(answer: dict[str, Any]) -> list[str]:
    """A namespace's usage (``answers.namespace_usage``) as the lines `usage` commands print."""
    size, rate = answer["namespaceBytes"], answer["publishesPerHour"]
    versions, largest = answer["versionsPerSkill"], answer["versionsPerSkill"]["largest"]
    most = f"{largest['used']} ({printable(largest['id'], 200)})" if largest else "0 (no skills)"
    return [
        f"archive bytes      {size['used']} of {size['limit']}",
        f"versions per skill {most} of {versions['limit']}",
        f"publishes per hour {rate['used']} of {rate['limit']} (in the last hour)",
        *(
            [f"writes per hour    {writes['used']} of {writes['limit']} (in the last hour)"]
            if isinstance(writes := answer.get("writesPerHour"), dict)
            else []  # a registry from before the write rate was listed
        ),
    ]
