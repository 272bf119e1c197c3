"""Options every `kiln registry` command shares: where the registry's stores are.

``--data`` is the embedded registry's folder; ``--db`` and ``--blobs`` (or
``KILN_REGISTRY_DB``/``KILN_REGISTRY_BLOBS``) point at shared backends instead, so the same
commands operate a deployment of several instances on PostgreSQL and object storage.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

T = TypeVar("T")


def default_data() -> Path:
    return Path(os.environ.get("KILN_HOME") or Path.home() / ".kiln") / "registry"


def open_or_fail(factory: Callable[[], T], data_dir: Path) -> T:
    """Open the stores; an unusable folder or server is a one-line error, not a traceback."""
    from skills_registry.registry.errors import RegistryError

    try:
        return factory()
    except RegistryError as exc:
        hint = f" ({exc.hint})" if getattr(exc, "hint", "") else ""
        raise click.ClickException(f"{exc}{hint}") from None
    except (OSError, sqlite3.Error) as exc:
        raise click.ClickException(f"cannot use data folder {data_dir}: {exc}") from None
    except Exception as exc:  # psycopg/botocore errors: one line, not a traceback
        module = type(exc).__module__.split(".")[0]
        if module not in ("psycopg", "psycopg_pool", "botocore", "boto3"):
            raise
        text = " ".join(str(exc).split())
        raise click.ClickException(f"cannot open the registry's stores: {text}") from None


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta[f"kiln_registry_{param.name}"] = value
    return value


DATA_OPTION = click.option(
    "--data",
    "data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Data folder (default stores, signing key). Default: $KILN_HOME/registry.",
)
DB_OPTION = click.option(
    "--db",
    default=None,
    metavar="URL",
    envvar="KILN_REGISTRY_DB",
    callback=_remember,
    help="Metadata store: sqlite:///path/registry.db or postgresql://... (default: under --data).",
)
BLOBS_OPTION = click.option(
    "--blobs",
    default=None,
    metavar="URL",
    envvar="KILN_REGISTRY_BLOBS",
    help="Archive store: file:///path/blobs or s3://bucket/prefix (AWS_* variables apply).",
)
# For commands whose signature does not take the URL: read back with ``chosen_db()``.
DB_OPTION_HIDDEN_VALUE = click.option(
    "--db",
    "db",
    default=None,
    metavar="URL",
    envvar="KILN_REGISTRY_DB",
    expose_value=False,
    callback=_remember,
    help="Metadata store: sqlite:///path/registry.db or postgresql://... (default: under --data).",
)


def chosen_db() -> str | None:
    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        if ctx.meta.get("kiln_registry_db"):
            return str(ctx.meta["kiln_registry_db"])
        ctx = ctx.parent
    return None


def open_store(data: Path | None) -> Any:
    """The metadata store that ``--db`` (or ``--data``) names."""
    from skills_registry.registry.backends import default_db_url, open_metadata

    data_dir = data or default_data()
    fresh = not chosen_db() and not (data_dir / "registry.db").exists()
    store = open_or_fail(lambda: open_metadata(chosen_db() or default_db_url(data_dir)), data_dir)
    if fresh:  # a mistyped --data must not hand out tokens for a registry nobody serves unsaid
        click.echo(
            f"kiln registry: no registry in {data_dir} yet: created one "
            f"(serve it with `kiln registry serve --data {data_dir}`)",
            err=True,
        )
    return store
