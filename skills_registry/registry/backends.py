"""Choose the registry's stores and key from URLs: embedded by default, shared when deployed.

``--db sqlite:///path/registry.db`` or ``postgresql://user@host/db``; ``--blobs
file:///path/blobs`` or ``s3://bucket/prefix``. Without them everything lives under ``--data``
(one SQLite file, a ``blobs/`` folder, ``keys/ed25519.key``). Instances that share a database
must share a signing key (``--signing-key FILE`` or ``KILN_REGISTRY_SIGNING_KEY``); the
database records the key's id at first start and refuses an instance with another one.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from skills_registry.registry.errors import KeyMismatch, RegistryError, UsageError
from skills_registry.registry.signing import (
    KEY_FILE,
    Signer,
    create_key_file,
    load_key_file,
    signer_from_text,
)
from skills_registry.registry.storage import BlobDir, BlobStore, MetadataStore

KEY_ENV = "KILN_REGISTRY_SIGNING_KEY"
SWEEP_GRACE_SECONDS = 3600.0  # a blob younger than this may belong to a publish in flight


@dataclass
class Backends:
    store: MetadataStore
    blobs: BlobStore
    db_url: str
    blobs_url: str

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if close is not None:
            close()


def default_db_url(data_dir: Path) -> str:
    return f"sqlite://{(Path(data_dir) / 'registry.db').resolve()}"


def default_blobs_url(data_dir: Path) -> str:
    return f"file://{(Path(data_dir) / 'blobs').resolve()}"


def open_metadata(url: str, *, make_folder: bool = True) -> MetadataStore:
    """The store ``url`` names; a SQLite file's missing folders are made only with
    ``make_folder`` (a ``--data`` folder, a migration's target), not for a ``--db`` given."""
    scheme = url.partition("://")[0].lower()
    if scheme == "sqlite":
        from skills_registry.registry.sqlite_store import SQLiteStore

        path = unquote(url[len("sqlite://") :])
        if not path.startswith("/"):
            raise UsageError(f"--db {url!r}: use an absolute path, sqlite:///path/registry.db")
        if not make_folder and not Path(path).parent.is_dir():  # a typo must not make folders
            raise UsageError(
                f"--db {url!r}: the folder {Path(path).parent} does not exist",
                hint="create it first, or name a file in an existing folder",
            )
        return SQLiteStore(Path(path))
    if scheme in ("postgresql", "postgres"):
        _require_extra("PostgreSQL", "psycopg", "psycopg_pool")
        from skills_registry.registry.pg_store import PostgresStore

        return PostgresStore(url)
    raise UsageError(
        f"unknown database URL {url!r}", hint="use sqlite:///path/registry.db or postgresql://..."
    )


def open_blobs(url: str) -> BlobStore:
    parts = urlsplit(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise UsageError(f"--blobs {url!r}: use file:///absolute/path")
        return BlobDir(Path(unquote(parts.path)))
    if parts.scheme == "s3":
        if not parts.netloc:
            raise UsageError(f"--blobs {url!r}: name a bucket, s3://bucket/prefix")
        _require_extra("S3", "boto3", "botocore")
        from skills_registry.registry.s3_blobs import S3Blobs

        return S3Blobs(parts.netloc, unquote(parts.path))
    raise UsageError(
        f"unknown blob store URL {url!r}", hint="use file:///path/blobs or s3://bucket/prefix"
    )


def open_backends(data_dir: Path, db: str | None = None, blobs: str | None = None) -> Backends:
    db_url = db or default_db_url(data_dir)
    blobs_url = blobs or default_blobs_url(data_dir)
    store = open_metadata(db_url, make_folder=db is None)
    return Backends(store, open_blobs(blobs_url), db_url, blobs_url)


def load_signer(
    data_dir: Path,
    key_file: Path | None = None,
    *,
    create: bool = True,
    store: MetadataStore | None = None,
) -> Signer:
    """The signing key: ``KILN_REGISTRY_SIGNING_KEY``, else ``key_file``, else ``data_dir``'s.

    A missing key file is created only with ``create``, and never for a ``store`` already
    bound to a key: a new key cannot verify what the lost one signed, so standing one in
    silently would leave every stored version (and every client's pin) unverifiable.
    """
    text = os.environ.get(KEY_ENV)
    path = Path(key_file or Path(data_dir) / KEY_FILE)
    try:
        signer = signer_from_text(text, KEY_ENV) if text else load_key_file(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if signer is not None:
        return signer
    if not create:
        raise UsageError(
            f"no signing key at {path}",
            hint="restore it from a backup, or create one with `kiln registry key --new`",
        )
    signer, created = create_key_file(path)
    if created and store is not None:
        try:
            store.bind_signing_key(signer.key_id)
        except KeyMismatch as exc:
            path.unlink()
            raise UsageError(
                f"no signing key at {path}, and this registry database is signed with "
                f"{exc.bound}: restore it from a backup, or copy it from the instance that "
                "created it (a new key cannot verify what it signed)"
            ) from None
    return signer


def sweep_orphans(
    store: MetadataStore, blobs: BlobStore, older_than: float = SWEEP_GRACE_SECONDS
) -> list[str]:
    """Delete archives no version references (a failed or refused publish); returns their shas.

    A database holding no skill beside an archive store holding archives is two registries'
    halves (a mistyped ``--db``): every archive would read as unreferenced, so nothing is
    deleted."""
    candidates = list(blobs.unreferenced_candidates(older_than))
    if candidates and not store.search("", limit=1)[0]:  # a refusal (exit 1), as documented
        raise RegistryError(
            f"the database holds no skill, yet the archive store holds {len(candidates)} "
            "archives older than the grace period: refusing to delete them",
            hint="check that --db/--data and --blobs name the same registry",
        )
    removed = []
    for sha in candidates:
        if not store.archive_referenced(sha):
            blobs.delete(sha)
            removed.append(sha)
    return removed


def _require_extra(feature: str, *modules: str) -> None:
    """A clear error when an optional dependency is missing (checked before importing our own
    module, so a broken import of our code still fails loudly)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(
            f"{feature} support is not installed ({', '.join(missing)})",
            hint="pip install 'kiln-agent[registry]'",
        )
