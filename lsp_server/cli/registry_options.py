"""Options every `kiln registry` command shares: where the registry's stores are, its quotas.

``--data`` is the embedded registry's folder; ``--db`` and ``--blobs`` (or
``KILN_REGISTRY_DB``/``KILN_REGISTRY_BLOBS``) point at shared backends instead, so the same
commands operate a deployment of several instances on PostgreSQL and object storage.
``quota_options`` gives a command the publish quotas, read the same way wherever they apply.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

import click

from kiln_errors.home import kiln_home
from lsp_server.cli.options import EnvNamedOption, WholeNumber
from skills_registry.registry.quotas import Quotas

T = TypeVar("T")


def default_data() -> Path:
    return kiln_home() / "registry"


def open_or_fail(factory: Callable[[], T], data_dir: Path) -> T:
    """Open the stores; an unusable folder or server is a one-line error, not a traceback."""
    from skills_registry.registry.errors import RegistryError, UsageError

    try:
        return factory()
    except UsageError:  # a --db or --blobs Kiln cannot use, no signing key: exit 2, one line
        raise
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


def warn_bad_ids(ids: list[str], what: str) -> None:
    """One stderr line naming skills whose ids the id rules refuse: rows written before the
    rules refused a trailing newline (``evil\n/x``) stay in a database, and ``what`` says how
    this command treated them. Escaped: the id printed as is would break the line."""
    from skills_registry.redirects import printable

    unique = sorted(set(ids))
    if not unique:
        return
    shown = ", ".join(printable(i, 80) for i in unique[:5]) + (", …" if len(unique) > 5 else "")
    click.echo(
        f"kiln: warning: {len(unique)} skill id(s) break the registry's id rules (written "
        f"before a trailing newline was refused): {shown}; {what}",
        err=True,
    )


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
    url, given = chosen_db() or default_db_url(data_dir), chosen_db() is not None
    store = open_or_fail(lambda: open_metadata(url, make_folder=not given), data_dir)
    if fresh:  # a mistyped --data must not hand out tokens for a registry nobody serves unsaid
        click.echo(
            f"kiln registry: no registry in {data_dir} yet: created one "
            f"(serve it with `kiln registry serve --data {data_dir}`)",
            err=True,
        )
    return store


def sqlite_file(url: str) -> Path | None:
    """The file a ``sqlite:///…`` URL names (None for another database, or a relative path,
    which opening refuses)."""
    if not url.lower().startswith("sqlite://"):
        return None
    raw = unquote(url[len("sqlite://") :])
    return Path("/" + raw.lstrip("/")) if raw.startswith("/") else None  # sqlite:////x is /x


def open_existing_store(data: Path | None) -> Any:
    """The metadata store a read-only command reads (`usage`, `audit`): a folder or SQLite file
    that holds no registry is refused, not created. A mistyped ``--data`` made an empty
    registry there and reported nothing in it, as if the namespace had no writes."""
    from skills_registry.registry.backends import default_db_url, open_metadata
    from skills_registry.registry.errors import UsageError

    data_dir = data or default_data()
    url = chosen_db() or default_db_url(data_dir)
    path = sqlite_file(url)
    if path is not None and not path.is_file():
        raise UsageError(
            f"no registry at {path if chosen_db() else data_dir}",
            hint="check --data or --db: this command reads a registry, it creates none",
        )
    return open_or_fail(lambda: open_metadata(url), data_dir)


def _quota_option(flag: str, default: int, envvar: str, upper: int, what: str) -> Any:
    return click.option(
        flag,
        default=default,
        show_default=True,
        envvar=envvar,
        cls=EnvNamedOption,
        type=WholeNumber(1, upper),
        help=f"{what}; also {envvar}.",
    )


_NAMESPACE_BYTES = _quota_option(
    "--namespace-bytes",
    Quotas.namespace_bytes,
    "KILN_REGISTRY_NAMESPACE_BYTES",
    2**62,
    "Archive bytes one namespace may store, all versions of all its skills (a publish past it "
    "gets a 413, a migration past it is refused)",
)
_VERSIONS_PER_SKILL = _quota_option(
    "--versions-per-skill",
    Quotas.versions_per_skill,
    "KILN_REGISTRY_VERSIONS_PER_SKILL",
    2**31,
    "Versions one skill may have (a publish past it gets a 409, a migration past it is refused)",
)
_PUBLISHES_PER_HOUR = _quota_option(
    "--publishes-per-hour",
    Quotas.publishes_per_hour,
    "KILN_REGISTRY_PUBLISHES_PER_HOUR",
    2**31,
    "Versions one namespace may publish in any hour (past it: a 429 with Retry-After)",
)
_WRITES_PER_HOUR = _quota_option(
    "--writes-per-hour",
    Quotas.writes_per_hour,
    "KILN_REGISTRY_WRITES_PER_HOUR",
    2**31,
    "Publishes, yanks, deprecations and dist-tag changes one namespace may make in any hour "
    "(past it: a 429 with Retry-After)",
)


def quota_options(*, rate: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--namespace-bytes`` and ``--versions-per-skill`` (and, with ``rate``,
    ``--publishes-per-hour`` and ``--writes-per-hour``), handed to the command as one
    ``quotas: Quotas`` argument; a command without ``rate`` gets the default rates, which it
    does not apply."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(command)
        def with_quotas(
            *args: Any,
            namespace_bytes: int,
            versions_per_skill: int,
            publishes_per_hour: int = Quotas.publishes_per_hour,
            writes_per_hour: int = Quotas.writes_per_hour,
            **kwargs: Any,
        ) -> Any:
            quotas = Quotas(
                namespace_bytes, versions_per_skill, publishes_per_hour, writes_per_hour
            )
            return command(*args, quotas=quotas, **kwargs)

        rates = [_PUBLISHES_PER_HOUR, _WRITES_PER_HOUR] if rate else []
        options = [_NAMESPACE_BYTES, _VERSIONS_PER_SKILL, *rates]
        for option in reversed(options):  # listed in --help in this order
            with_quotas = option(with_quotas)
        return with_quotas

    return decorate
