"""Options several command groups share."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from kiln_errors.setting import number_in, whole_in


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
    limit of ``nan`` would never be reached, and ``inf`` MB is no size. Text is read as every
    setting is (``kiln_errors.setting``): plain ASCII decimal, not ``1_000`` or ``١٢``."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and number_in(value, -math.inf, math.inf) is None:
            self.fail(f"{value[:40]!r} is not a finite number.", param, ctx)
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


class WholeNumber(click.IntRange):
    """An ``IntRange`` whose text is plain ASCII digits (``kiln_errors.setting``): ``int()``
    also takes ``١٢`` and ``1_000``, and said "'abc' is not a valid integer range"."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and whole_in(value, -(10**64), 10**64) is None:
            self.fail(f"{value[:40]!r} is not a whole number.", param, ctx)
        return super().convert(value, param, ctx)


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
