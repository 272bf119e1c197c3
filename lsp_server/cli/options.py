"""Options several command groups share."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click


def _workspace(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path:
    """Without ``--root``, the workspace `kiln run` would use here: the repository holding the
    current folder (the folder itself outside a repository)."""
    if value is not None:
        return value
    from agent.memory import repository_root

    return repository_root(Path.cwd())


# The workspace a command acts on: an existing folder; by default the one `kiln run` uses.
root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    callback=_workspace,
    help="Workspace root (default: the repository holding the current folder, as `kiln run`).",
)


class FiniteFloat(click.FloatRange):
    """A ``FloatRange`` that also refuses ``nan`` and ``inf`` (which ``float()`` accepts): a
    limit of ``nan`` would never be reached, and ``inf`` MB is no size."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


class EnvNamedOption(click.Option):
    """An option also read from ``envvar``: a bad value taken from the variable is said under
    the variable's name. `KILN_REGISTRY_VERSIONS_PER_SKILL=abc kiln registry serve` said
    "Invalid value for '--versions-per-skill'", an option the user never typed."""

    def consume_value(self, ctx: click.Context, opts: Any) -> Any:
        value, source = super().consume_value(ctx, opts)
        ctx.meta[f"kiln.source.{self.name}"] = source
        return value, source

    def process_value(self, ctx: click.Context, value: Any) -> Any:
        try:
            return super().process_value(ctx, value)
        except click.BadParameter as exc:
            if ctx.meta.get(f"kiln.source.{self.name}") is click.core.ParameterSource.ENVIRONMENT:
                exc.param_hint = f"{self.envvar} (read for {self.opts[0]})"
            raise
