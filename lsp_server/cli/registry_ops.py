"""`kiln registry migrate|sweep`: copy a registry to other backends; drop orphaned archives.

Both work on any backend pair (``--db``/``--blobs`` URLs, see ``registry_options``) and may run
while servers serve: ``migrate`` only adds what the target lacks (and only when all of it fits
the target's size quotas), ``sweep`` only removes archives older than a grace period that no
version references.
"""

from __future__ import annotations

import contextlib
import os
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
    sqlite_file,
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
    from skills_registry.registry.errors import UsageError
    from skills_registry.registry.migrate import check_quotas, migrate_registry

    here = Path.cwd()
    signer = open_or_fail(lambda: load_signer(here, signing_key), here)
    if (path := sqlite_file(source)) is not None and not path.is_file():
        raise UsageError(f"no registry at {path}", hint="check --from: the copy reads it")
    src = open_or_fail(lambda: open_metadata(source), here)
    made = _to_be_made(sqlite_file(target))
    dst = open_or_fail(lambda: open_metadata(target), here)
    try:  # refused before any write to the target: a target this run created is removed
        open_or_fail(lambda: check_quotas(src, dst, quotas), here)
        src_blobs = open_or_fail(lambda: open_blobs(from_blobs), here)
        dst_blobs = open_or_fail(lambda: open_blobs(to_blobs), here)
    except click.ClickException:
        _remove(made)
        raise
    open_or_fail(lambda: src.bind_signing_key(signer.key_id), here)
    open_or_fail(lambda: dst.bind_signing_key(signer.key_id), here)
    report = open_or_fail(
        lambda: migrate_registry(
            src, src_blobs, dst, dst_blobs, signer, lambda line: click.echo(line, err=True)
        ),
        here,
    )
    if report.skipped:
        click.echo(
            f"kiln: warning: {len(report.skipped)} skill id(s) break the registry's id rules "
            f"(written before a trailing newline was refused): {', '.join(report.skipped)}; "
            "not copied",
            err=True,
        )
    if report.skipped_tags:
        click.echo(
            f"kiln: warning: {len(report.skipped_tags)} dist-tag(s) break the dist-tag rule "
            f"(set before it held): {', '.join(report.skipped_tags)}; not copied",
            err=True,
        )
    click.echo(
        f"{report.skills} skills: {report.copied} versions copied, "
        f"{report.present} already present (verified)"
    )


def _to_be_made(path: Path | None) -> list[Path]:
    """What opening the SQLite file ``path`` creates: the file and the folders above it that
    are not there yet, deepest first (nothing when the file is there, or for PostgreSQL)."""
    if path is None or os.path.lexists(path):
        return []
    made = [path]
    while not os.path.lexists(made[-1].parent):
        made.append(made[-1].parent)
    return made


def _remove(made: list[Path]) -> None:
    """Remove what ``_to_be_made`` listed (with SQLite's ``-wal`` and ``-shm`` beside the
    file): a refused `migrate` leaves no empty target behind to be mistaken for a registry."""
    if not made:
        return
    for path in (made[0], *(Path(f"{made[0]}{end}") for end in ("-wal", "-shm", "-journal"))):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    for folder in made[1:]:
        with contextlib.suppress(OSError):  # not empty: something else was put there
            folder.rmdir()
