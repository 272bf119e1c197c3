"""`kiln registry migrate|sweep`: copy a registry to other backends; drop orphaned archives.

Both work on any backend pair (``--db``/``--blobs`` URLs, see ``registry_options``) and may run
while servers serve: ``migrate`` only adds what the target lacks (and only when all of it fits
the target's size quotas), ``sweep`` only removes archives older than a grace period that no
version references.
"""

from __future__ import annotations

from pathlib import Path

import click

from lsp_server.cli.options import FiniteFloat
from lsp_server.cli.registry_options import (
    BLOBS_OPTION,
    DATA_OPTION,
    DB_OPTION,
    default_data,
    open_or_fail,
    quota_options,
)
from skills_registry.registry.quotas import Quotas


@click.command("sweep")
@DATA_OPTION
@DB_OPTION
@BLOBS_OPTION
@click.option(
    "--older-than",
    default=3600.0,
    show_default=True,
    type=FiniteFloat(0),
    help="Only archives stored at least this many seconds ago (publishes in flight are younger).",
)
def sweep_cmd(data: Path | None, db: str | None, blobs: str | None, older_than: float) -> None:
    """Delete archives that no version references (left by refused or interrupted publishes)."""
    from skills_registry.registry.backends import open_backends, sweep_orphans

    data_dir = data or default_data()
    if db is None and not (data_dir / "registry.db").exists():  # never a new, empty registry
        raise click.ClickException(
            f"no registry in {data_dir} (no registry.db: pass the --data folder "
            "`kiln registry serve` uses, or --db URL)"
        )
    backends = open_or_fail(lambda: open_backends(data_dir, db, blobs), data_dir)
    removed = open_or_fail(
        lambda: sweep_orphans(backends.store, backends.blobs, older_than), data_dir
    )
    click.echo(f"removed {len(removed)} unreferenced archives")


@click.command("migrate")
@click.option("--from", "source", required=True, metavar="URL", help="Source database URL.")
@click.option("--from-blobs", required=True, metavar="URL", help="Source archive store URL.")
@click.option("--to", "target", required=True, metavar="URL", help="Target database URL.")
@click.option("--to-blobs", required=True, metavar="URL", help="Target archive store URL.")
@click.option(
    "--signing-key",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    required=True,
    help="The source registry's key file: signatures are checked with it, and the target "
    "is bound to it (serve the target with the same key).",
)
@quota_options(rate=False)
def migrate_cmd(
    source: str,
    from_blobs: str,
    target: str,
    to_blobs: str,
    signing_key: Path,
    quotas: Quotas,
) -> None:
    """Copy a registry to other backends, verifying every archive's sha256 and signature.

    Safe to run again: versions already at the target are compared, not rewritten. A copy
    that would pass the target's size quotas is refused whole; the publish rate does not apply.
    """
    from skills_registry.registry.backends import load_signer, open_blobs, open_metadata
    from skills_registry.registry.migrate import check_quotas, migrate_registry

    here = Path.cwd()
    signer = open_or_fail(lambda: load_signer(here, signing_key), here)
    src = open_or_fail(lambda: open_metadata(source), here)
    dst = open_or_fail(lambda: open_metadata(target), here)
    open_or_fail(lambda: check_quotas(src, dst, quotas), here)  # before any write to the target
    src_blobs = open_or_fail(lambda: open_blobs(from_blobs), here)
    dst_blobs = open_or_fail(lambda: open_blobs(to_blobs), here)
    open_or_fail(lambda: src.bind_signing_key(signer.key_id), here)
    open_or_fail(lambda: dst.bind_signing_key(signer.key_id), here)
    report = open_or_fail(
        lambda: migrate_registry(
            src, src_blobs, dst, dst_blobs, signer, lambda line: click.echo(line, err=True)
        ),
        here,
    )
    click.echo(
        f"{report.skills} skills: {report.copied} versions copied, "
        f"{report.present} already present (verified)"
    )
