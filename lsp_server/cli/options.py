"""Options several command groups share."""

from __future__ import annotations

from pathlib import Path

import click

# The workspace a command acts on: an existing folder, the current one by default.
root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=".",
    show_default=True,
    help="Workspace root.",
)
