"""Options several command groups share."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

# The workspace a command acts on: an existing folder, the current one by default.
root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=".",
    show_default=True,
    help="Workspace root.",
)


class FiniteFloat(click.FloatRange):
    """A ``FloatRange`` that also refuses ``nan`` and ``inf`` (which ``float()`` accepts): a
    limit of ``nan`` would never be reached, and ``inf`` MB is no size."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number
